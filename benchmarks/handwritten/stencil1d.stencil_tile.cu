// Hand-written: the block's inputs plus a halo of RADIUS on each side staged in shared memory
// once (block of at most 256 threads), every neighbour read from the tile.
#define RADIUS 3
#define BLOCK 256

__global__ void stencil_1d(const float* in, float* out, int n)
{
    __shared__ float tile[BLOCK + 2 * RADIUS];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int first = blockIdx.x * blockDim.x - RADIUS;
    for (int t = threadIdx.x; t < BLOCK + 2 * RADIUS; t += blockDim.x)
        if (first + t >= 0 && first + t < n) tile[t] = in[first + t];
    __syncthreads();
    if (i >= n) return;
    int s = threadIdx.x + RADIUS;
    if (i < RADIUS || i >= n - RADIUS) {
        out[i] = tile[s];
        return;
    }
    out[i] = 0.05f * (tile[s - 3] + tile[s + 3]) + 0.1f * (tile[s - 2] + tile[s + 2]) +
             0.2f * (tile[s - 1] + tile[s + 1]) + 0.3f * tile[s];
}
