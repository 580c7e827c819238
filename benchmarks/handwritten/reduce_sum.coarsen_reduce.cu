// Hand-written for the pass's default launch: blocks of 256 threads (8 warps) over
// ceil_div(ceil_div(n, 256), 8) blocks. Warp w of block b sums the 256 inputs of segment
// b * 8 + w and writes partial[b * 8 + w]: two float4 loads per lane, both issued before any
// add, read through the read-only path, then five shuffles. The ragged last segment and a
// buffer not 16-byte aligned are summed element by element.
__global__ void block_sum(const float* in, float* partial, int n)
{
    const unsigned int lane = threadIdx.x & 31;
    const unsigned int seg = blockIdx.x * 8 + (threadIdx.x >> 5);
    const unsigned int segments = (n + 255) / 256;
    if (seg >= segments) return;
    const unsigned int base = seg * 256;
    float v;
    if (base + 256 <= (unsigned int)n && (reinterpret_cast<size_t>(in) & 15) == 0) {
        const float4* in4 = reinterpret_cast<const float4*>(in + base);
        const float4 a = __ldg(in4 + lane);
        const float4 b = __ldg(in4 + lane + 32);
        v = ((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w));
    } else {
        v = 0.0f;
        for (unsigned int i = base + lane; i < base + 256 && i < (unsigned int)n; i += 32)
            v += in[i];
    }
    #pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) partial[seg] = v;
}
