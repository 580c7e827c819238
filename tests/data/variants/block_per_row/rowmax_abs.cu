// Per-row maximum magnitude (an amax for scaling): fmaxf of fabsf, stored once per row.
__global__ void row_amax(const float* a, float* amax, int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float best = 0.0f;
        for (int c = 0; c < cols; c++) best = fmaxf(best, fabsf(a[row * cols + c]));
        amax[row] = best;
    }
}
