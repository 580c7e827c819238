// Softmax whose row pointers are named x and y (the parameters are in and out), unsigned row,
// the guard as an if-block, the maximum with max() over a row-pointer read.
__global__ void softmax_xy(const float* in, float* out, unsigned int rows, unsigned int cols)
{
    unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        const float* x = in + row * cols;
        float* y = out + row * cols;
        float hi = -INFINITY;
        for (int c = 0; c < cols; ++c) hi = max(hi, x[c]);
        float z = 0.0f;
        for (int c = 0; c < cols; ++c) z += __expf(x[c] - hi);
        for (int c = 0; c < cols; ++c) y[c] = __expf(x[c] - hi) / z;
    }
}
