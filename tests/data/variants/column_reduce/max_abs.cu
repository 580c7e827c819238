// Column maxima of |x| with fmaxf, a {}-braced loop body and a scale after the loop.
__global__ void col_absmax(const float* __restrict__ x, float* __restrict__ scale, int n, int d)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < d) {
        float m = -INFINITY;
        for (int i = 0; i < n; i += 1) {
            m = fmaxf(m, fabsf(x[i * d + j]));
        }
        scale[j] = m / 127.0f;
    }
}
