#define TILE 16
#define IDX(r, c, ld) ((r) * (ld) + (c))
__global__ void rows(const float* x, float* y, int R, int C)
{
    unsigned r = blockIdx.x;
    const float* row = x + r * C;
    for (unsigned j = threadIdx.x; j < C; j += blockDim.x)
        y[IDX(r, j, C)] = row[j] * 2.0f;
}
__global__ void early(const float* x, float* y, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] += x[i];
}
__global__ void divmod(const float* x, float* y, int n, int T)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int t = i / T;
        y[i] = x[t] + x[i % T];
    } else {
        y[0] = 0.0f;
    }
}
__global__ void gather(const float* x, const int* idx, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && idx[i] >= 0)
        y[i] = x[idx[i]];
    int j = idx[i];
    atomicAdd(&y[j], 1.0f);
}
__global__ void tiles(const float* A, float* B, int W)
{
    __shared__ float s[TILE][TILE];
    int bx = blockIdx.x * TILE, by = blockIdx.y * TILE;
    for (int k = 0; k < TILE; k += 4)
        s[threadIdx.y + k][threadIdx.x] = A[(by + threadIdx.y + k) * W + bx + threadIdx.x];
    __syncthreads();
    for (int k = 0; k <= TILE - 1; ++k)
        B[(bx + threadIdx.y) * W + by + k] = s[threadIdx.x][k];
}
__global__ void bumped(const float* x, float* y, int C)
{
    x += blockIdx.x * C;
    y += blockIdx.x;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        acc = fmaxf(acc, x[c]);
    *y = acc;
}
__global__ void grid_stride(const float* x, float* y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
