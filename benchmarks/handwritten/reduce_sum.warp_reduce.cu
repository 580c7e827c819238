// Hand-written: block sum with warp shuffles, one shared slot per warp.
__global__ void block_sum(const float* in, float* partial, int n)
{
    __shared__ float warp_sum[32];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = (i < n) ? in[i] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    if (tid % 32 == 0) warp_sum[tid / 32] = v;
    __syncthreads();
    if (tid < 32) {
        v = (tid < blockDim.x / 32) ? warp_sum[tid] : 0.0f;
        for (int offset = 16; offset > 0; offset /= 2)
            v += __shfl_down_sync(0xffffffff, v, offset);
    }
    if (tid == 0) {
        partial[blockIdx.x] = v;
    }
}
