// Matrix-vector product y = A x for a row-major rows x cols matrix A.
// Naive version: one thread per row; each thread walks its own row, so neighbouring threads
// read addresses a whole row apart.

__global__ void gemv_rows(const float* A, const float* x, float* y, int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float acc = 0.0f;
        for (int c = 0; c < cols; ++c) {
            acc += A[(size_t)row * cols + c] * x[c];
        }
        y[row] = acc;
    }
}
