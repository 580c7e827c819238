// gemv with the output first, sizes last, a row pointer and an early return.
__global__ void gemv_rp(float* y, const float* A, const float* x, int m, int n)
{
    int r = threadIdx.x + blockIdx.x * blockDim.x;
    if (r >= m) return;
    const float* a = A + (size_t)r * n;
    float acc = 0.0f;
    for (int c = 0; c < n; ++c) acc += a[c] * x[c];
    y[r] = acc;
}
