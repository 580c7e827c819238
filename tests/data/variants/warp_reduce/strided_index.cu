// Interleaved addressing without the modulo: `index = 2 * s * tid`.
__global__ void reduce1(const float* in, float* out, int n)
{
    __shared__ float sm[256];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sm[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = 1; s < blockDim.x; s *= 2) {
        unsigned int index = 2 * s * tid;
        if (index < blockDim.x) {
            sm[index] += sm[index + s];
        }
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sm[0];
}
