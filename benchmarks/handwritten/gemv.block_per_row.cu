// Hand-written: one block per row; the dot product combined across each warp with xor shuffles,
// then across the block's warps through shared memory.
__global__ void gemv_rows(const float* A, const float* x, float* y, int rows, int cols)
{
    __shared__ float partial[32];
    int row = blockIdx.x;
    if (row >= rows) return;
    const float* a = A + (size_t)row * cols;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += a[c] * x[c];
    for (int offset = 16; offset > 0; offset /= 2)
        acc += __shfl_xor_sync(0xffffffff, acc, offset);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int w = 0; w < blockDim.x / 32; ++w) total += partial[w];
        y[row] = total;
    }
}
