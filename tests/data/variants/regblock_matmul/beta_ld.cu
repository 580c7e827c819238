// BLAS-style: leading dimensions, C = alpha * A B + beta * C, sizes as long.
__global__ void sgemm_ld(long m, long n, long k, float alpha, const float* A, long lda,
                         const float* B, long ldb, float beta, float* C, long ldc)
{
    long col = blockIdx.x * blockDim.x + threadIdx.x;
    long row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        float acc = 0.0f;
        for (long p = 0; p < k; ++p)
            acc += A[row * lda + p] * B[p * ldb + col];
        C[row * ldc + col] = alpha * acc + beta * C[row * ldc + col];
    }
}
