// A GEMM whose template tile is both the block's side and its square root: threadIdx.x is
// split into a row and a column of TILE, so the block is TILE * TILE threads.
template <const unsigned TILE>
__global__ void tile_square(int M, int N, int K, float alpha, const float* A, const float* B,
                            float beta, float* C) {
    const int row = blockIdx.x * TILE + threadIdx.x / TILE;
    const int col = blockIdx.y * TILE + threadIdx.x % TILE;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}

template __global__ void tile_square<32>(int, int, int, float, const float*, const float*, float,
                                         float*);
