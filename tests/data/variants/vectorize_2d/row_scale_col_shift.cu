// A per-row scale (the same for the four columns) and a per-column shift.
__global__ void affine_rows(const float* x, const float* scale, const float* shift, float* y,
                            int rows, int cols)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (c < cols && r < rows) {
        y[r * cols + c] = x[r * cols + c] * scale[r] + shift[c];
    }
}
