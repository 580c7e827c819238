// Hand-written: 128x128 tiles of C per block of 16x16 threads, 8x8 outputs per thread in
// registers (rows ty*4.. and 64+ty*4.., columns likewise), A and B staged 8 deep in shared
// memory (A transposed), 16-byte loads where in range and aligned; the last, partial slab
// stops at k so that every output adds exactly the original terms.
__global__ void matmul_naive(const float* A, const float* B, float* C, int m, int n, int k)
{
    constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
    alignas(16) __shared__ float As[BK][BM], Bs[BK][BN];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    float acc[TM][TN] = {};
    float a[TM], b[TN];
    for (int p0 = 0; p0 < k; p0 += BK) {
        {   // A: 128 rows x 8, one float4 (4 consecutive p) per thread
            const int r = tid / 2, q = tid % 2 * 4, row = blockIdx.y * BM + r, p = p0 + q;
            if (row < m && p + 3 < k && reinterpret_cast<size_t>(&A[row * k + p]) % 16 == 0) {
                const float4 v = *reinterpret_cast<const float4*>(&A[row * k + p]);
                As[q][r] = v.x; As[q + 1][r] = v.y; As[q + 2][r] = v.z; As[q + 3][r] = v.w;
            } else {
                for (int e = 0; e < 4; ++e)
                    As[q + e][r] = (row < m && p + e < k) ? A[row * k + p + e] : 0.0f;
            }
        }
        {   // B: 8 x 128 columns, one float4 (4 consecutive columns) per thread
            const int q = tid / 32, c = tid % 32 * 4, p = p0 + q, col = blockIdx.x * BN + c;
            if (p < k && col + 3 < n && reinterpret_cast<size_t>(&B[p * n + col]) % 16 == 0) {
                *reinterpret_cast<float4*>(&Bs[q][c]) =
                    *reinterpret_cast<const float4*>(&B[p * n + col]);
            } else {
                for (int e = 0; e < 4; ++e)
                    Bs[q][c + e] = (p < k && col + e < n) ? B[p * n + col + e] : 0.0f;
            }
        }
        __syncthreads();
        const int steps = min(BK, k - p0);
#pragma unroll
        for (int pp = 0; pp < BK; ++pp) {
            if (pp == steps) break;
            for (int i = 0; i < TM; i += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&As[pp][i / 4 * 64 + ty * 4]);
                a[i] = v.x; a[i + 1] = v.y; a[i + 2] = v.z; a[i + 3] = v.w;
            }
            for (int j = 0; j < TN; j += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[pp][j / 4 * 64 + tx * 4]);
                b[j] = v.x; b[j + 1] = v.y; b[j + 2] = v.z; b[j + 3] = v.w;
            }
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i) {
        const int row = blockIdx.y * BM + i / 4 * 64 + ty * 4 + i % 4;
        for (int j = 0; j < TN; ++j) {
            const int col = blockIdx.x * BN + j / 4 * 64 + tx * 4 + j % 4;
            if (row < m && col < n) {
                C[row * n + col] = acc[i][j];
            }
        }
    }
}
