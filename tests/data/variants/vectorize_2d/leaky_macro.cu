// A #define'd element offset and a leaky ReLU through a local.
#define AT(r, c, n) ((r) * (n) + (c))

__global__ void leaky_bias(const float* __restrict__ x, const float* __restrict__ bias,
                           float* __restrict__ y, int rows, int cols, float slope)
{
    int tx = blockIdx.x * blockDim.x + threadIdx.x;
    int ty = blockIdx.y * blockDim.y + threadIdx.y;
    if (ty < rows && tx < cols) {
        const float v = x[AT(ty, tx, cols)] + bias[tx];
        y[AT(ty, tx, cols)] = v >= 0.0f ? v : slope * v;
    }
}
