// 64-bit offsets through size_t casts, __restrict__ operands, the block's own index first.
__global__ void matmul_f32(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ c, int rows, int inner, int cols)
{
    int j = threadIdx.x + blockDim.x * blockIdx.x;
    int i = threadIdx.y + blockDim.y * blockIdx.y;
    if (i < rows && j < cols) {
        float s = 0.0f;
        for (int t = 0; t < inner; ++t)
            s += a[(size_t)i * inner + t] * b[(size_t)t * cols + j];
        c[(size_t)i * cols + j] = s;
    }
}
