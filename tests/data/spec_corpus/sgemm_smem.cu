#define CEIL_DIV(M, N) (((M) + (N) - 1) / (N))

// C = alpha * A * B + beta * C with A M x K, B K x N, C M x N, row-major. One TILE x TILE tile
// of C per block, one element per thread (threadIdx.x split into a row and a column of the
// tile); the block's pointers are moved to its tiles first, then A walks right and B down one
// tile per step of the K loop. No bounds checks: M, N and K are whole tiles.
template <const int TILE>
__global__ void sgemm_smem(int M, int N, int K, float alpha, const float* A, const float* B,
                           float beta, float* C) {
    const unsigned int tileRow = blockIdx.x;
    const unsigned int tileCol = blockIdx.y;
    __shared__ float As[TILE * TILE];
    __shared__ float Bs[TILE * TILE];
    const unsigned int col = threadIdx.x % TILE;
    const unsigned int row = threadIdx.x / TILE;

    A += tileRow * TILE * K;
    B += tileCol * TILE;
    C += tileRow * TILE * N + tileCol * TILE;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[row * TILE + col] = A[row * K + col];
        Bs[row * TILE + col] = B[row * N + col];
        __syncthreads();
        A += TILE;
        B += TILE * N;
        for (int k = 0; k < TILE; ++k) acc += As[row * TILE + k] * Bs[k * TILE + col];
        __syncthreads();
    }
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

void run_sgemm_smem(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                    float* C) {
    dim3 grid(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
    dim3 block(32 * 32);
    sgemm_smem<32><<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
}
