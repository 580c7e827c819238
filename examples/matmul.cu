// C = A * B for row-major A (m x k), B (k x n), C (m x n), single precision.
// Naive version: one thread per element of C, every operand read from global memory.

__global__ void matmul_naive(const float* A, const float* B, float* C, int m, int n, int k)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        float acc = 0.0f;
        for (int p = 0; p < k; ++p) {
            acc += A[row * k + p] * B[p * n + col];
        }
        C[row * n + col] = acc;
    }
}
