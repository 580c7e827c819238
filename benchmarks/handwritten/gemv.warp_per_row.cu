// Hand-written: one warp per row, lanes stride over the columns, shuffle reduction.
__global__ void gemv_rows(const float* A, const float* x, float* y, int rows, int cols)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    float acc = 0.0f;
    for (int c = lane; c < cols; c += 32)
        acc += A[(size_t)row * cols + c] * x[c];
    for (int offset = 16; offset > 0; offset /= 2)
        acc += __shfl_down_sync(0xffffffff, acc, offset);
    if (lane == 0) y[row] = acc;
}
