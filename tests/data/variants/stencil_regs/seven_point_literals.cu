// Seven-point smoothing with the weights written out, restrict pointers, the interior in an
// if with an else-if for the rest of the range, the ends set to zero.
__global__ void smooth7(const float* __restrict__ src, float* __restrict__ dst, int n)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= 3 && x < n - 3) {
        dst[x] = 0.25f * src[x] + 0.2f * (src[x - 1] + src[x + 1]) +
                 0.1f * (src[x - 2] + src[x + 2]) + 0.075f * (src[x - 3] + src[x + 3]);
    } else if (x < n) {
        dst[x] = 0.0f;
    }
}
