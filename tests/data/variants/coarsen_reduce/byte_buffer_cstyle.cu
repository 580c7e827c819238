// Per-block sums into a byte buffer viewed as floats with a C-style cast; the load guarded
// with a branch, the interleaved loop with a modulo test.
__global__ void chunk_sums(const float* data, float* sums, unsigned int count)
{
    extern __shared__ unsigned char scratch[];
    float* const acc = (float*)scratch;
    unsigned int t = threadIdx.x;
    unsigned int g = blockIdx.x * blockDim.x + threadIdx.x;
    float v = 0.0f;
    if (g < count) v = data[g];
    acc[t] = v;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        if (t % (2 * s) == 0) acc[t] += acc[t + s];
        __syncthreads();
    }
    if (t == 0) sums[blockIdx.x] = acc[0];
}
