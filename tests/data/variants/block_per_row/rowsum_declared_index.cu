// Row sums of a long-row matrix; the column index is declared before the loop (C89 style).
__global__ void row_total(int rows, int cols, const float* M, float* total)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 0.0f;
        int c;
        for (c = 0; c < cols; c++) acc += M[r * cols + c];
        total[r] = acc;
    }
}
