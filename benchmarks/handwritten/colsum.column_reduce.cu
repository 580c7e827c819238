// Hand-written: 32 columns x 8 row groups per block (launched as 32 x 8 threads); each
// thread sums every 8th row of its column, the 8 partial sums meet in shared memory.
__global__ void colsum(const float* a, float* out, int rows, int cols)
{
    __shared__ float part[8][32];
    int c = blockIdx.x * 32 + threadIdx.x;
    float sum = 0.0f;
    if (c < cols)
        for (int r = threadIdx.y; r < rows; r += 8) sum += a[r * cols + c];
    part[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    for (int s = 4; s > 0; s /= 2) {
        if (threadIdx.y < s) part[threadIdx.y][threadIdx.x] += part[threadIdx.y + s][threadIdx.x];
        __syncthreads();
    }
    if (threadIdx.y == 0 && c < cols) out[c] = part[0][threadIdx.x];
}
