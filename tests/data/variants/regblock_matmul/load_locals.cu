// Each operand loaded into a local first, then multiplied: three statements in the loop.
__global__ void mm_locals(const float* A, const float* B, float* C, int M, int N, int K)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int i = 0; i < K; ++i) {
            const float a = A[row * K + i];
            const float b = B[i * N + col];
            sum += a * b;
        }
        C[row * N + col] = sum;
    }
}
