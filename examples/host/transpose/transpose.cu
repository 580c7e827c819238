// Matrix transpose, out = in^T for a rows x cols row-major matrix.
// Naive version: reads are coalesced, writes stride by `rows` elements.

__global__ void transpose_naive(const float* in, float* out, int rows, int cols)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        out[col * rows + row] = in[row * cols + col];
    }
}
