#define TILE_DIM 32
#define BLOCK_ROWS 8

// Tiled transpose through shared memory: each block moves a TILE_DIM x TILE_DIM tile with
// TILE_DIM x BLOCK_ROWS threads.
__global__ void transpose(float* odata, const float* idata, int width, int height) {
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        int yj = y + j;
        if (x < width && yj < height) tile[threadIdx.y + j][threadIdx.x] = idata[yj * width + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE_DIM + threadIdx.x;
    y = blockIdx.x * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        int yj = y + j;
        if (x < height && yj < width) odata[yj * height + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

void transpose_host(float* o, const float* i, int w, int h) {
    dim3 grid((w + TILE_DIM - 1) / TILE_DIM, (h + TILE_DIM - 1) / TILE_DIM);
    dim3 block(TILE_DIM, BLOCK_ROWS);
    transpose<<<grid, block>>>(o, i, w, h);
}
