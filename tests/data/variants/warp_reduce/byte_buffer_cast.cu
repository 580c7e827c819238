// Dynamic shared memory declared as raw bytes and viewed as floats through reinterpret_cast;
// a block maximum of absolute values, the halving loop written with blockDim.x / 2.
__global__ void block_absmax(const float* values, float* block_max, int n)
{
    extern __shared__ unsigned char smem[];
    float* sdata = reinterpret_cast<float*>(smem);
    const int tid = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + tid;
    sdata[tid] = (i < n) ? fabsf(values[i]) : 0.0f;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (tid < half) sdata[tid] = fmaxf(sdata[tid], sdata[tid + half]);
        __syncthreads();
    }
    if (tid == 0) block_max[blockIdx.x] = sdata[0];
}
