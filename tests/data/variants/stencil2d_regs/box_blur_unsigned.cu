// Box blur whose window size is a macro, unsigned indices, the border pixels copied through.
#define BLUR_RADIUS 1
#define BLUR_TAPS ((2 * BLUR_RADIUS + 1) * (2 * BLUR_RADIUS + 1))

__global__ void box_blur(const float* src, float* dst, unsigned width, unsigned height)
{
    const unsigned px = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= width || py >= height) return;
    if (px < BLUR_RADIUS || py < BLUR_RADIUS || px + BLUR_RADIUS >= width ||
        py + BLUR_RADIUS >= height) {
        dst[py * width + px] = src[py * width + px];
        return;
    }
    float sum = 0.0f;
    for (int ky = -BLUR_RADIUS; ky <= BLUR_RADIUS; ++ky)
        for (int kx = -BLUR_RADIUS; kx <= BLUR_RADIUS; ++kx)
            sum += src[(py + ky) * width + (px + kx)];
    dst[py * width + px] = sum * (1.0f / BLUR_TAPS);
}
