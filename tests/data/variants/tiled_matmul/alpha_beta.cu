// The SGEMM of BLAS: C = alpha * A B + beta * C, leading dimensions as parameters.
__global__ void sgemm_ab(int m, int n, int k, float alpha, const float* A, int lda,
                         const float* B, int ldb, float beta, float* C, int ldc)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (y < m && x < n) {
        float t = 0.0f;
        for (int l = 0; l < k; ++l) {
            t += A[y * lda + l] * B[l * ldb + x];
        }
        C[y * ldc + x] = alpha * t + beta * C[y * ldc + x];
    }
}
