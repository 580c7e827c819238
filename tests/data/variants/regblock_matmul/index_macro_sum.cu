// An index macro, const indices and the sum written out (sum = sum + ...).
#define IDX(r, c, ld) ((r) * (ld) + (c))

__global__ void gemm_idx(const float* A, const float* B, float* C, int M, int N, int K)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; k += 1) {
            sum = sum + A[IDX(row, k, K)] * B[IDX(k, col, N)];
        }
        C[IDX(row, col, N)] = sum;
    }
}
