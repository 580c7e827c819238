// A and C through row pointers, B through a column pointer taken as &B[col].
__global__ void sgemm_rows(const float* A, const float* B, float* C, int M, int N, int K)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    const float* a_row = A + row * K;
    const float* b_col = &B[col];
    float* c_row = C + row * N;
    float acc = 0.0f;
    for (int p = 0; p < K; ++p) {
        acc += a_row[p] * b_col[p * N];
    }
    c_row[col] = acc;
}
