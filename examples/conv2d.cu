// 2D convolution of a rows x cols single-channel image with a 3x3 filter, zero padding:
// out[r][c] = sum_{dy,dx in -1..1} w[dy+1][dx+1] * in[r+dy][c+dx].
// Naive version: one output pixel per thread, every input pixel read from global memory.

#define KSIZE 3
#define RADIUS 1

__global__ void conv2d_3x3(const float* in, const float* w, float* out, int rows, int cols)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        float acc = 0.0f;
        for (int dy = -RADIUS; dy <= RADIUS; ++dy) {
            for (int dx = -RADIUS; dx <= RADIUS; ++dx) {
                int r = row + dy;
                int c = col + dx;
                if (r >= 0 && r < rows && c >= 0 && c < cols) {
                    acc += w[(dy + RADIUS) * KSIZE + (dx + RADIUS)] * in[r * cols + c];
                }
            }
        }
        out[row * cols + col] = acc;
    }
}
