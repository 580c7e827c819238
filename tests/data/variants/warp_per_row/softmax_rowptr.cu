// Softmax through row pointers named `row` and `out_row`, `++i`, `float tmp = 0.0`.
__global__ void softmax_rp(const float* x, float* y, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* row = x + r * cols;
    float* out_row = y + r * cols;
    float mx = row[0];
    for (int i = 1; i < cols; ++i) mx = fmaxf(mx, row[i]);
    float tmp = 0.0;
    for (int i = 0; i < cols; ++i) tmp += expf(row[i] - mx);
    for (int i = 0; i < cols; ++i) out_row[i] = expf(row[i] - mx) / tmp;
}
