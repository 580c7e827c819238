// RMS normalization with a single warp per row: the block's 32 threads stride over the row
// summing squares, a butterfly of shuffles gives every lane the row's sum of squares, and
// every thread scales its columns by the reciprocal root mean square.
__global__ void rms_norm_warp(const float* __restrict__ x, float* __restrict__ y, int nrows,
                              int ncols, float eps)
{
    const int row = blockIdx.x;
    const int t = threadIdx.x;
    if (row >= nrows) return;
    const float* xr = x + (size_t)row * ncols;
    float sq = 0.0f;
    for (int col = t; col < ncols; col += blockDim.x) {
        const float v = xr[col];
        sq += v * v;
    }
    for (int mask = 16; mask >= 1; mask = mask >> 1) {
        sq = sq + __shfl_xor_sync(0xffffffffu, sq, mask);
    }
    const float scale = rsqrtf(sq / ncols + eps);
    for (int col = t; col < ncols; col += blockDim.x) {
        y[(size_t)row * ncols + col] = scale * xr[col];
    }
}
