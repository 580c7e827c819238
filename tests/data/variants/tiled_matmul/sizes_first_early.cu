// Sizes first, output before inputs, an early return, the sum written out explicitly.
__global__ void gemm_naive(int M, int N, int K, float* C, const float* A, const float* B)
{
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= M || c >= N) return;
    float sum = 0.0f;
    for (int p = 0; p < K; p++) {
        sum = sum + A[r * K + p] * B[p * N + c];
    }
    C[r * N + c] = sum;
}
