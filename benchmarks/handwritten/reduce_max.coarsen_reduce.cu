// Hand-written: one warp per block of 512 inputs (launched with 32 threads per block),
// float4 loads when the block's inputs are all there, then warp shuffles.
__global__ void block_max(const float* in, float* out, int n)
{
    unsigned int base = blockIdx.x * 512;
    float m = -INFINITY;
    if (base + 512 <= n) {
        const float4* in4 = reinterpret_cast<const float4*>(in + base);
        for (int k = threadIdx.x; k < 128; k += 32) {
            float4 q = in4[k];
            m = fmaxf(m, fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w)));
        }
    } else {
        for (unsigned int i = base + threadIdx.x; i < n; i += 32) m = fmaxf(m, in[i]);
    }
    for (int offset = 16; offset > 0; offset /= 2)
        m = fmaxf(m, __shfl_down_sync(0xffffffff, m, offset));
    if (threadIdx.x == 0) out[blockIdx.x] = m;
}
