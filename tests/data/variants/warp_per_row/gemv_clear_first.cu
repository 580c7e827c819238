// y = A x with one thread per row, the dot product summed into y[i] after clearing it.
__global__ void gemv_rows(const float* A, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = 0;
        for (int j = 0; j < n; j++)
            y[i] += A[i * n + j] * x[j];
    }
}
