// Hand-written: block maximum with warp shuffles, one shared slot per warp.
__global__ void block_max(const float* in, float* out, int n)
{
    __shared__ float warp_max[32];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + tid;
    float v = (i < n) ? in[i] : -INFINITY;
    for (int offset = 16; offset > 0; offset /= 2)
        v = fmaxf(v, __shfl_down_sync(0xffffffff, v, offset));
    if (tid % 32 == 0) warp_max[tid / 32] = v;
    __syncthreads();
    if (tid < 32) {
        v = (tid < blockDim.x / 32) ? warp_max[tid] : -INFINITY;
        for (int offset = 16; offset > 0; offset /= 2)
            v = fmaxf(v, __shfl_down_sync(0xffffffff, v, offset));
    }
    if (tid == 0) out[blockIdx.x] = v;
}
