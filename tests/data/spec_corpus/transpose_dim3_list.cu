#define TILE 32
#define BLOCK_ROWS 8

// Transpose with no bounds checks: the host launches whole tiles only (W and H multiples of
// TILE), declaring grid and block in one dim3 declaration.
__global__ void transpose_whole_tiles(float* dst, const float* src, int W, int H) {
    __shared__ float buf[TILE][TILE + 1];
    int c = blockIdx.x * TILE + threadIdx.x;
    int r = blockIdx.y * TILE + threadIdx.y;
    for (int k = 0; k < TILE; k += BLOCK_ROWS) buf[threadIdx.y + k][threadIdx.x] = src[(r + k) * W + c];
    __syncthreads();
    int oc = blockIdx.y * TILE + threadIdx.x;
    int orow = blockIdx.x * TILE + threadIdx.y;
    for (int k = 0; k < TILE; k += BLOCK_ROWS) dst[(orow + k) * H + oc] = buf[threadIdx.x][threadIdx.y + k];
}

void transpose(float* dst, const float* src, int W, int H) {
    dim3 grid(W / TILE, H / TILE), threads(TILE, BLOCK_ROWS);
    transpose_whole_tiles<<<grid, threads>>>(dst, src, W, H);
}
