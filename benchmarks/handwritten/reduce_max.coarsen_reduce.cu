// Hand-written for the pass's default launch: blocks of 256 threads (8 warps) over
// ceil_div(ceil_div(n, 512), 8) blocks. Warp w of block b takes the maximum of the 512
// inputs of segment b * 8 + w and writes out[b * 8 + w]: four float4 loads per lane, all
// issued before any compare, read through the read-only path, then five shuffles. The ragged
// last segment and a buffer not 16-byte aligned are read element by element.
__global__ void block_max(const float* in, float* out, int n)
{
    const unsigned int lane = threadIdx.x & 31;
    const unsigned int seg = blockIdx.x * 8 + (threadIdx.x >> 5);
    const unsigned int segments = (n + 511) / 512;
    if (seg >= segments) return;
    const unsigned int base = seg * 512;
    float m = -INFINITY;
    if (base + 512 <= (unsigned int)n && (reinterpret_cast<size_t>(in) & 15) == 0) {
        const float4* in4 = reinterpret_cast<const float4*>(in + base);
        float4 q[4];
        #pragma unroll
        for (int k = 0; k < 4; ++k) q[k] = __ldg(in4 + lane + 32 * k);
        #pragma unroll
        for (int k = 0; k < 4; ++k)
            m = fmaxf(m, fmaxf(fmaxf(q[k].x, q[k].y), fmaxf(q[k].z, q[k].w)));
    } else {
        for (unsigned int i = base + lane; i < base + 512 && i < (unsigned int)n; i += 32)
            m = fmaxf(m, in[i]);
    }
    #pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, offset));
    if (lane == 0) out[seg] = m;
}
