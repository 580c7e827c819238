// A's row through a row pointer, B's column through a column pointer.
__global__ void matmul_rowptr(const float* A, const float* B, float* C, int m, int n, int k)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        const float* a_row = A + row * k;
        const float* b_col = B + col;
        float acc = 0.0f;
        for (int p = 0; p < k; ++p) {
            acc += a_row[p] * b_col[p * n];
        }
        C[row * n + col] = acc;
    }
}
