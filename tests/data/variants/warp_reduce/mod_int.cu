// The interleaved tree with `tid % (2 * s) == 0`, int counters and `s <<= 1`.
__global__ void reduce0(const float* g_in, float* g_out, int n)
{
    __shared__ float sdata[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? g_in[i] : 0.0f;
    __syncthreads();
    for (int s = 1; s < blockDim.x; s <<= 1) {
        if (tid % (2 * s) == 0) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) g_out[blockIdx.x] = sdata[0];
}
