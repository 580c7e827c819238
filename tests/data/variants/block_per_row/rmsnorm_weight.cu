// RMS norm with a weight vector, size_t row offsets through row pointers.
__global__ void rmsnorm_w(const float* x, const float* weight, float* y, int rows, int cols)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float ss = 0.0f;
    for (int c = 0; c < cols; ++c) ss += xr[c] * xr[c];
    const float scale = rsqrtf(ss / cols + 1e-6f);
    for (int c = 0; c < cols; ++c) yr[c] = xr[c] * scale * weight[c];
}
