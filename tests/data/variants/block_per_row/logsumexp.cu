// Row log-sum-exp: one value per row, flat indices, different loop variable names.
__global__ void row_logsumexp(const float* x, float* lse, int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    float m = -INFINITY;
    for (int a = 0; a < cols; ++a) m = fmaxf(m, x[row * cols + a]);
    float s = 0.0f;
    for (int b = 0; b < cols; ++b) s += expf(x[row * cols + b] - m);
    lse[row] = m + logf(s);
}
