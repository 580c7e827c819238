// RMS normalization of long rows that already runs one block per row: each thread sums the
// squares of its strided columns, a tree over blockDim.x in dynamic shared memory totals
// them, and the row is scaled by the reciprocal root and the weights.
__global__ void rmsnorm_rows(float* __restrict__ out, const float* __restrict__ inp,
                             const float* __restrict__ weight, int rows, int C)
{
    extern __shared__ float partial[];
    const int r = blockIdx.x;
    const int t = threadIdx.x;
    if (r >= rows) return;
    const float* xr = inp + (size_t)r * C;
    float ss = 0.0f;
    for (int c = t; c < C; c += blockDim.x)
        ss += xr[c] * xr[c];
    partial[t] = ss;
    __syncthreads();
    for (int h = blockDim.x >> 1; h > 0; h >>= 1) {
        if (t < h) partial[t] += partial[t + h];
        __syncthreads();
    }
    const float inv = rsqrtf(partial[0] / C + 1e-5f);
    for (int c = t; c < C; c += blockDim.x)
        out[(size_t)r * C + c] = xr[c] * inv * weight[c];
}
