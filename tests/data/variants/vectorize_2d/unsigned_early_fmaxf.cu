// unsigned indices, an early return, fmaxf for the ReLU.
__global__ void bias_relu_u(const float* in, const float* bias, float* out, unsigned rows,
                            unsigned cols)
{
    unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= rows || c >= cols) return;
    out[r * cols + c] = fmaxf(in[r * cols + c] + bias[c], 0.0f);
}
