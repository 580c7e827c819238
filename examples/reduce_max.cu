// Block maximum: each block of 512 threads writes the largest of its 512 consecutive inputs.
// Naive version: a shared-memory tree with sequential addressing (no divergence or bank
// conflicts, but nine barriers and a half-idle block from the first step on).

__global__ void block_max(const float* in, float* out, int n)
{
    __shared__ float smax[512];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + tid;
    smax[tid] = (i < n) ? in[i] : -INFINITY;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            smax[tid] = fmaxf(smax[tid], smax[tid + s]);
        }
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = smax[0];
}
