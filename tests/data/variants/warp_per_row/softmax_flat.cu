// Softmax with an if-block guard, unsigned row, every access as x[row * cols + c].
__global__ void softmax_flat(const float* in, float* out, unsigned rows, unsigned cols)
{
    unsigned row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float m = -INFINITY;
        for (unsigned c = 0; c < cols; c++)
            m = fmaxf(m, in[row * cols + c]);
        float s = 0.0f;
        for (unsigned c = 0; c < cols; c++)
            s = s + expf(in[row * cols + c] - m);
        for (unsigned c = 0; c < cols; c++)
            out[row * cols + c] = expf(in[row * cols + c] - m) / s;
    }
}
