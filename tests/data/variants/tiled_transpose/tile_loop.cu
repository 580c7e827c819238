// Transpose in a vendor sample's shape: output first, #define tile sizes, each thread walks
// the rows of its tile with a loop (block TILE_DIM x BLOCK_ROWS), a bounds test per element.
#define TILE_DIM 32
#define BLOCK_ROWS 8

__global__ void transpose_tile_loop(float* odata, const float* idata, int width, int height)
{
    int x = blockIdx.x * TILE_DIM + threadIdx.x;
    int y = blockIdx.y * TILE_DIM + threadIdx.y;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS) {
        if (x < width && y + j < height) {
            odata[x * height + (y + j)] = idata[(y + j) * width + x];
        }
    }
}
