// A #define'd block size for the array and the loop, fmaxf, threadIdx used directly.
#define BLOCK_SIZE 128

__global__ void block_peak(float* peaks, const float* signal, int n)
{
    __shared__ float smax[BLOCK_SIZE];
    int gid = blockIdx.x * BLOCK_SIZE + threadIdx.x;
    smax[threadIdx.x] = gid < n ? fabsf(signal[gid]) : -INFINITY;
    __syncthreads();
    for (int s = BLOCK_SIZE / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) smax[threadIdx.x] = fmaxf(smax[threadIdx.x + s], smax[threadIdx.x]);
        __syncthreads();
    }
    if (threadIdx.x == 0) peaks[blockIdx.x] = smax[0];
}
