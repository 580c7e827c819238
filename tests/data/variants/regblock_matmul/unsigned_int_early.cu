// unsigned int indices, an early return, `float tmp = 0.0` (a double literal) and i++.
__global__ void sgemm_naive_u(unsigned int M, unsigned int N, unsigned int K, const float* A,
                              const float* B, float* C)
{
    const unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= N || y >= M) return;
    float tmp = 0.0;
    for (unsigned int i = 0; i < K; i++) {
        tmp += A[y * K + i] * B[i * N + x];
    }
    C[y * N + x] = tmp;
}
