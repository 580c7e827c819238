// Hand-written: one block per row; mean and variance each combined across the warps with xor
// shuffles and across the block through shared memory (every thread reads the block's total).
__global__ void layernorm_rows(const float* x, const float* gamma, const float* beta, float* y,
                               int rows, int cols, float eps)
{
    __shared__ float partial[32];
    int row = blockIdx.x;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += xr[c];
    for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_xor_sync(0xffffffff, sum, offset);
    if (lane == 0) partial[warp] = sum;
    __syncthreads();
    sum = 0.0f;
    for (int w = 0; w < warps; ++w) sum += partial[w];
    __syncthreads();
    float mean = sum / cols;
    float sq = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sq += (xr[c] - mean) * (xr[c] - mean);
    for (int offset = 16; offset > 0; offset /= 2)
        sq += __shfl_xor_sync(0xffffffff, sq, offset);
    if (lane == 0) partial[warp] = sq;
    __syncthreads();
    sq = 0.0f;
    for (int w = 0; w < warps; ++w) sq += partial[w];
    float rstd = rsqrtf(sq / cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}
