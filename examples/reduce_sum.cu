// Block reduction: each block of 256 threads sums 256 consecutive elements and writes one
// partial sum. Naive version: interleaved addressing with a modulo test (divergent warps,
// bank conflicts), one element per thread.

#define BLOCK 256

__global__ void block_sum(const float* in, float* partial, int n)
{
    __shared__ float s[BLOCK];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
        if (tid % (2 * stride) == 0) {
            s[tid] += s[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) {
        partial[blockIdx.x] = s[0];
    }
}
