// 5x5 convolution over an image stored with a row pitch (elements) wider than its columns,
// the filter a parameter pointer, the output packed; clamped to the image by skipping taps.
#define K 5
#define HALF (K / 2)

__global__ void conv5x5(const float* input, const float* __restrict__ taps, float* output,
                        int rows, int cols, int pitch)
{
    int gx = blockIdx.x * blockDim.x + threadIdx.x;
    int gy = blockIdx.y * blockDim.y + threadIdx.y;
    if (gx < cols && gy < rows) {
        float s = 0.0f;
        for (int a = 0; a < K; ++a) {
            int yy = gy + a - HALF;
            if (yy < 0 || yy >= rows) continue;
            for (int b = 0; b < K; ++b) {
                int xx = gx + b - HALF;
                if (xx >= 0 && xx < cols) s += taps[a * K + b] * input[yy * pitch + xx];
            }
        }
        output[gy * cols + gx] = s;
    }
}
