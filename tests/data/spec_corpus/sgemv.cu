// y = alpha * A x + beta * y, A rows x cols row-major, one row per thread.
__global__ void sgemv_rows(int rows, int cols, float alpha, const float* A, const float* x,
                           float beta, float* y) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) acc += A[r * cols + c] * x[c];
    y[r] = alpha * acc + beta * y[r];
}

void gemv(int rows, int cols, const float* A, const float* x, float* y) {
    sgemv_rows<<<(rows + 255) / 256, 256>>>(rows, cols, 1.0f, A, x, 0.0f, y);
}
