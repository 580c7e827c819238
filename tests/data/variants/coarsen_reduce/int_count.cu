// Integer counts of positive inputs per block, interleaved with a modulo test.
__global__ void count_positive(int n, const float* data, int* counts)
{
    __shared__ int c[512];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + tid;
    c[tid] = (i < n && data[i] > 0.0f) ? 1 : 0;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (tid % (2 * s) == 0) c[tid] += c[tid + s];
        __syncthreads();
    }
    if (tid == 0) counts[blockIdx.x] = c[0];
}
