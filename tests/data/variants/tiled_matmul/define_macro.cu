// Index macros and size_t indices.
#define IDX2(i, j, ld) ((i) * (ld) + (j))

__global__ void mm_sz(const float* a, const float* b, float* c, size_t m, size_t n, size_t k)
{
    size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t i = (size_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (i < m && j < n) {
        float acc = 0.0f;
        for (size_t p = 0; p < k; ++p) {
            acc += a[IDX2(i, p, k)] * b[IDX2(p, j, n)];
        }
        c[IDX2(i, j, n)] = acc;
    }
}
