// Hand-written: transpose through a padded 32x32 shared tile, block 32 x blockDim.y.
__global__ void transpose_naive(const float* in, float* out, int rows, int cols)
{
    __shared__ float tile[32][33];
    int col = blockIdx.x * 32 + threadIdx.x;
    int row = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += blockDim.y)
        if (row + j < rows && col < cols)
            tile[threadIdx.y + j][threadIdx.x] = in[(row + j) * cols + col];
    __syncthreads();
    col = blockIdx.y * 32 + threadIdx.x;
    row = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += blockDim.y)
        if (row + j < cols && col < rows)
            out[(row + j) * rows + col] = tile[threadIdx.x][threadIdx.y + j];
}
