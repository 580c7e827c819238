// Hand-written: 4 consecutive outputs per thread (grid ceil_div(ceil_div(n, 256), 4) of 256),
// one float4 load of the centre and 3 scalar loads on each side into registers, one float4
// store; the ends, a ragged tail and a misaligned pointer go one output at a time.
#define RADIUS 3

__global__ void stencil_1d(const float* __restrict__ in, float* __restrict__ out, int n)
{
    const int i0 = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (i0 >= n) return;
    const bool aligned = (reinterpret_cast<size_t>(in) | reinterpret_cast<size_t>(out)) % 16 == 0;
    if (aligned && i0 >= RADIUS && i0 + 3 + RADIUS < n) {
        const float4 c = *reinterpret_cast<const float4*>(&in[i0]);
        const float x[10] = {in[i0 - 3], in[i0 - 2], in[i0 - 1], c.x, c.y, c.z, c.w,
                             in[i0 + 4], in[i0 + 5], in[i0 + 6]};
        const float w[7] = {0.05f, 0.1f, 0.2f, 0.3f, 0.2f, 0.1f, 0.05f};
        float y[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            float acc = 0.0f;
#pragma unroll
            for (int r = 0; r < 7; ++r) acc += w[r] * x[j + r];
            y[j] = acc;
        }
        *reinterpret_cast<float4*>(&out[i0]) = make_float4(y[0], y[1], y[2], y[3]);
        return;
    }
    for (int i = i0; i < i0 + 4 && i < n; ++i) {
        if (i < RADIUS || i >= n - RADIUS) { out[i] = in[i]; continue; }
        const float w[7] = {0.05f, 0.1f, 0.2f, 0.3f, 0.2f, 0.1f, 0.05f};
        float acc = 0.0f;
        for (int r = -RADIUS; r <= RADIUS; ++r) acc += w[r + RADIUS] * in[i + r];
        out[i] = acc;
    }
}
