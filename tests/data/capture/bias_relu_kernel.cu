// y[r, c] = max(x[r, c] + bias[c], 0) over a rows x cols matrix, called from PyTorch
// (torch_bias_relu.py).
__global__ void bias_relu(const float* __restrict__ x, const float* __restrict__ bias,
                          float* __restrict__ y, int n, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i] + bias[i % cols];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}
