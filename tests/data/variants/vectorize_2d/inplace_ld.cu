// In place, with a leading dimension wider than the row: x[r * ld + c] += bias[c].
__global__ void add_bias_inplace(float* x, const float* bias, int rows, int cols, int ld)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols)
        x[r * ld + c] += bias[c];
}
