// The offset in a size_t local, computed once and used for the load and the store.
__global__ void add_bias_2d(const float* x, const float* b, float* y, int height, int width)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < height && col < width) {
        size_t idx = (size_t)row * width + col;
        float v = x[idx] + b[col];
        y[idx] = v > 0.0f ? v : 0.0f;
    }
}
