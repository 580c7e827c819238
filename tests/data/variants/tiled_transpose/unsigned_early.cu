// Output first, unsigned indices, an early return as the guard.
__global__ void transpose_u(float* dst, const float* src, unsigned width, unsigned height)
{
    unsigned cx = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned cy = blockIdx.y * blockDim.y + threadIdx.y;
    if (cx >= width || cy >= height) return;
    dst[cx * height + cy] = src[cy * width + cx];
}
