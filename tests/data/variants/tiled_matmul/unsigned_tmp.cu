// unsigned indices, `float tmp = 0.0` (a double literal) and `++i`.
__global__ void sgemm_u(const float* A, const float* B, float* C, unsigned M, unsigned N,
                        unsigned K)
{
    unsigned col = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float tmp = 0.0;
        for (unsigned i = 0; i < K; ++i)
            tmp += A[row * K + i] * B[i * N + col];
        C[row * N + col] = tmp;
    }
}
