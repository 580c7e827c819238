// Matrix-vector product with a size_t row and an explicit sum.
__global__ void matvec(const float* M, const float* v, float* out, size_t rows, size_t cols)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows) {
        float dot = 0.0f;
        for (size_t j = 0; j < cols; ++j)
            dot = dot + M[i * cols + j] * v[j];
        out[i] = dot;
    }
}
