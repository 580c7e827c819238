// Coarse bins by a shift, int counts, int literal increment, a block-size #define in the index.
#define BLOCK 512

__global__ void coarse_hist(const int* values, int* hist16, int len)
{
    int gid = blockIdx.x * BLOCK + threadIdx.x;
    if (gid >= len) {
        return;
    }
    const int bin = values[gid] >> 4;
    atomicAdd(&hist16[bin], 1);
}
