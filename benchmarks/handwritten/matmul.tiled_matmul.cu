// Hand-written: 32x32 shared tiles, block 32x8, each thread 4 rows of one column; the last,
// partial tile stops at k so that every output adds exactly the original terms. Braces on
// every loop, as the example writes them.
__global__ void matmul_naive(const float* A, const float* B, float* C, int m, int n, int k)
{
    __shared__ float As[32][32], Bs[32][32];
    int col = blockIdx.x * 32 + threadIdx.x;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int p0 = 0; p0 < k; p0 += 32) {
        for (int r = 0; r < 4; ++r) {
            int y = threadIdx.y + r * 8;
            int row = blockIdx.y * 32 + y;
            int p = p0 + threadIdx.x;
            As[y][threadIdx.x] = (row < m && p < k) ? A[row * k + p] : 0.0f;
            Bs[y][threadIdx.x] = (p0 + y < k && col < n) ? B[(p0 + y) * n + col] : 0.0f;
        }
        __syncthreads();
        if (p0 + 32 <= k) {
#pragma unroll
            for (int pp = 0; pp < 32; ++pp) {
                for (int r = 0; r < 4; ++r) {
                    acc[r] += As[threadIdx.y + r * 8][pp] * Bs[pp][threadIdx.x];
                }
            }
        } else {
            for (int pp = 0; p0 + pp < k; ++pp) {
                for (int r = 0; r < 4; ++r) {
                    acc[r] += As[threadIdx.y + r * 8][pp] * Bs[pp][threadIdx.x];
                }
            }
        }
        __syncthreads();
    }
    for (int r = 0; r < 4; ++r) {
        int row = blockIdx.y * 32 + threadIdx.y + r * 8;
        if (row < m && col < n) {
            C[row * n + col] = acc[r];
        }
    }
}
