// C = A B for row-major matrices, summing into C itself: the element is cleared, then every
// step of the inner dimension adds one product to it.
__global__ void matmul_into_c(const float* A, const float* B, float* C, int m, int n, int k)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    C[row * n + col] = 0.0f;
    for (int p = 0; p < k; ++p)
        C[row * n + col] += A[row * k + p] * B[p * n + col];
}
