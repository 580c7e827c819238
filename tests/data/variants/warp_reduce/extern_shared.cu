// Dynamic shared memory (extern), the block size from blockDim.x, a sum of squares.
__global__ void sumsq(const float* __restrict__ x, float* __restrict__ out, int n)
{
    extern __shared__ float red[];
    unsigned int t = threadIdx.x;
    unsigned int g = blockIdx.x * blockDim.x + t;
    float v = 0.0f;
    if (g < n) v = x[g] * x[g];
    red[t] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x >> 1; s > 0; s >>= 1) {
        if (t < s) red[t] += red[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = red[0];
}
