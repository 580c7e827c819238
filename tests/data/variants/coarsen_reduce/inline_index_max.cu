// Per-block maxima with the global index written out in the guard and the read, no local
// for it, and the load through fmaxf's identity for a ragged end.
__global__ void block_maxima(const float* __restrict__ vals, float* __restrict__ out, int count)
{
    __shared__ float best[128];
    best[threadIdx.x] = (blockIdx.x * blockDim.x + threadIdx.x < count)
                            ? vals[blockIdx.x * blockDim.x + threadIdx.x]
                            : -INFINITY;
    __syncthreads();
    for (int stride = 1; stride < blockDim.x; stride <<= 1) {
        int k = 2 * stride * threadIdx.x;
        if (k < blockDim.x) best[k] = fmaxf(best[k], best[k + stride]);
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = best[0];
}
