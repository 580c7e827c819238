// Hand-written: one warp per block of 256 inputs (launched with 32 threads per block),
// float4 loads when the block's inputs are all there, then warp shuffles.
__global__ void block_sum(const float* in, float* partial, int n)
{
    unsigned int base = blockIdx.x * 256;
    float v = 0.0f;
    if (base + 256 <= n) {
        const float4* in4 = reinterpret_cast<const float4*>(in + base);
        for (int k = threadIdx.x; k < 64; k += 32) {
            float4 q = in4[k];
            v += (q.x + q.y) + (q.z + q.w);
        }
    } else {
        for (unsigned int i = base + threadIdx.x; i < n; i += 32) v += in[i];
    }
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    if (threadIdx.x == 0) partial[blockIdx.x] = v;
}
