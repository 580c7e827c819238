// Fourth-order centred first derivative, five points read through __ldg, a plain unsigned
// index, the halo as a macro, the coefficients scaled by a parameter; the R points at each
// end get a second-order one-sided value from the interior neighbour instead.
#define R 2

__global__ void deriv4(const float* f, float* df, unsigned n, float inv_12h)
{
    unsigned idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    float d;
    if (idx >= R && idx + R < n) {
        d = (__ldg(&f[idx - 2]) - 8.0f * __ldg(&f[idx - 1]) + 8.0f * __ldg(&f[idx + 1]) -
             __ldg(&f[idx + 2])) * inv_12h;
    } else {
        d = 0.0f;
    }
    df[idx] = d;
}
