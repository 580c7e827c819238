// 1D 7-point stencil with fixed weights: out[i] = sum_{r=-3..3} w[r] * in[i + r] for interior
// points; the three points at each end are copied. Naive version: every neighbour read from
// global memory.

#define RADIUS 3

__global__ void stencil_1d(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (i < RADIUS || i >= n - RADIUS) {
        out[i] = in[i];
        return;
    }
    const float w[2 * RADIUS + 1] = {0.05f, 0.1f, 0.2f, 0.3f, 0.2f, 0.1f, 0.05f};
    float acc = 0.0f;
    for (int r = -RADIUS; r <= RADIUS; ++r) {
        acc += w[r + RADIUS] * in[i + r];
    }
    out[i] = acc;
}
