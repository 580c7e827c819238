// Three-pass softmax over long rows: row pointers, max from -INFINITY, then the sum, then the
// normalized store (the online form fuses the first two passes).
__global__ void softmax_long(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        const float* src = in + (size_t)r * cols;
        float* dst = out + (size_t)r * cols;
        float mx = -INFINITY;
        for (int j = 0; j < cols; j++) mx = fmaxf(mx, src[j]);
        float denom = 0.0f;
        for (int j = 0; j < cols; j++) denom = denom + expf(src[j] - mx);
        for (int j = 0; j < cols; j++) dst[j] = expf(src[j] - mx) / denom;
    }
}
