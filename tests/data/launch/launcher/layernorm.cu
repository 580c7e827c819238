// Layer normalization over the rows of a rows x cols matrix:
// y = (x - mean) / sqrt(var + eps) * gamma + beta, mean and variance taken over each row.
// Naive version: one thread per row, three passes over the row.

__global__ void layernorm_rows(const float* x, const float* gamma, const float* beta, float* y,
                               int rows, int cols, float eps)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float sum = 0.0f;
    for (int c = 0; c < cols; ++c) sum += xr[c];
    float mean = sum / cols;
    float sq = 0.0f;
    for (int c = 0; c < cols; ++c) {
        float d = xr[c] - mean;
        sq += d * d;
    }
    float rstd = rsqrtf(sq / cols + eps);
    for (int c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}
