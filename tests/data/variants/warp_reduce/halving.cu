// Sequential addressing: the stride halves from blockDim.x / 2, `if (tid < s)`.
__global__ void reduce_seq(const float* in, float* out, unsigned int n)
{
    __shared__ float buf[256];
    unsigned int tid = threadIdx.x;
    unsigned int gid = blockIdx.x * blockDim.x + tid;
    buf[tid] = gid < n ? in[gid] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s)
            buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = buf[0];
}
