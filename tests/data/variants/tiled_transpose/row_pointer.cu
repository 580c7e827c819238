// The input row reached through a row pointer, the output column through a local offset.
__global__ void transpose_rowptr(const float* in, float* out, int rows, int cols)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        const float* src_row = in + row * cols;
        int dst = col * rows + row;
        out[dst] = src_row[col];
    }
}
