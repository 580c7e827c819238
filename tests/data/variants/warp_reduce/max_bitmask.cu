// A max reduction, the tree's test as `(tid & (2 * s - 1)) == 0`.
__global__ void block_max(const float* v, float* m, int n)
{
    __shared__ float s_max[256];
    const unsigned int tid = threadIdx.x;
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    s_max[tid] = (i < n) ? v[i] : -INFINITY;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if ((tid & (2 * s - 1)) == 0)
            s_max[tid] = fmaxf(s_max[tid], s_max[tid + s]);
        __syncthreads();
    }
    if (tid == 0) m[blockIdx.x] = s_max[0];
}
