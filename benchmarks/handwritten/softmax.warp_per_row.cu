// Hand-written: one warp per row; max and sum combined across the warp with xor shuffles.
__global__ void softmax_rows(const float* x, float* y, int rows, int cols)
{
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float m = -INFINITY;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
    for (int offset = 16; offset > 0; offset /= 2)
        m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, offset));
    float sum = 0.0f;
    for (int c = lane; c < cols; c += 32) sum += expf(xr[c] - m);
    for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_xor_sync(0xffffffff, sum, offset);
    for (int c = lane; c < cols; c += 32) yr[c] = expf(xr[c] - m) / sum;
}
