// Five-point derivative stencil, unsigned index, literal offsets, interior in an if-block.
__global__ void deriv5(const float* f, float* df, unsigned int n, float inv_h)
{
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 2 && t + 2 < n) {
        df[t] = (f[t - 2] - 8.0f * f[t - 1] + 8.0f * f[t + 1] - f[t + 2]) * inv_h;
    } else if (t < n) {
        df[t] = 0.0f;
    }
}
