// RMS norm with flat indexing, the weight applied per column, `++c` and an explicit sum.
__global__ void rmsnorm(float* out, const float* in, const float* weight, int rows, int cols,
                        float eps)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float ss = 0.0f;
        for (int c = 0; c < cols; ++c)
            ss = ss + in[r * cols + c] * in[r * cols + c];
        float scale = rsqrtf(ss / cols + eps);
        for (int c = 0; c < cols; ++c)
            out[r * cols + c] = in[r * cols + c] * scale * weight[c];
    }
}
