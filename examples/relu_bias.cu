// ReLU after adding a per-column bias, on a rows x cols row-major matrix:
// y[r][c] = max(x[r][c] + bias[c], 0). Naive version: a 2D grid of 16x16 blocks, one element
// per thread, so each warp covers two half rows of 16 elements.

__global__ void relu_bias(const float* x, const float* bias, float* y, int rows, int cols)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        float v = x[row * cols + col] + bias[col];
        y[row * cols + col] = v > 0.0f ? v : 0.0f;
    }
}
