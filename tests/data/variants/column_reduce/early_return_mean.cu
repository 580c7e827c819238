// Column means: unsigned indices, early return, an explicit sum, threadIdx first.
__global__ void col_mean(const float* m, float* mean, unsigned int nrows, unsigned int ncols)
{
    unsigned int col = threadIdx.x + blockIdx.x * blockDim.x;
    if (col >= ncols) return;
    float sum = 0.0f;
    for (unsigned int row = 0; row < nrows; row++) {
        sum = sum + m[row * ncols + col];
    }
    mean[col] = sum / nrows;
}
