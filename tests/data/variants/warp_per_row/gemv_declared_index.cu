// y = A x, the column index declared at the top of the guarded block and assigned in the loop.
__global__ void gemv_declared(int nrows, int ncols, const float* A, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nrows) {
        int j;
        float tmp = 0.0f;
        for (j = 0; j < ncols; j++)
            tmp += A[i * ncols + j] * x[j];
        y[i] = tmp;
    }
}
