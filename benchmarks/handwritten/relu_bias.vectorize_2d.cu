// Hand-written: each thread four consecutive columns as float4 (block 64x4, grid
// ceil_div(cols, 256) x ceil_div(rows, 4)); one by one when the four are not all in range
// or a pointer is not 16-byte aligned.
__global__ void relu_bias(const float* x, const float* bias, float* y, int rows, int cols)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (row >= rows) return;
    const int i = row * cols + col;
    if (col + 3 < cols && reinterpret_cast<size_t>(x + i) % 16 == 0 &&
            reinterpret_cast<size_t>(bias + col) % 16 == 0 &&
            reinterpret_cast<size_t>(y + i) % 16 == 0) {
        const float4 v = *reinterpret_cast<const float4*>(x + i);
        const float4 b = *reinterpret_cast<const float4*>(bias + col);
        float4 r;
        r.x = fmaxf(v.x + b.x, 0.0f);
        r.y = fmaxf(v.y + b.y, 0.0f);
        r.z = fmaxf(v.z + b.z, 0.0f);
        r.w = fmaxf(v.w + b.w, 0.0f);
        *reinterpret_cast<float4*>(y + i) = r;
    } else {
        for (int c = col; c < cols && c < col + 4; ++c) {
            float v = x[row * cols + c] + bias[c];
            y[row * cols + c] = v > 0.0f ? v : 0.0f;
        }
    }
}
