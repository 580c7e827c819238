// A per-row scale through i / cols and a per-column shift through i % cols, size_t index.
__global__ void scale_rows_flat(const float* x, const float* scale, const float* shift,
                                float* y, size_t rows, size_t cols)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols)
        y[i] = x[i] * scale[i / cols] + shift[i % cols];
}
