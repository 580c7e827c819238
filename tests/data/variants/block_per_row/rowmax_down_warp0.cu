// Largest entry of each row, one block per row: shuffles fold each warp's maxima down to
// lane 0, lane 0 parks them, and warp 0 alone folds the parked maxima (the other warps load
// the neutral value); thread 0 writes the row's maximum.
#include <cfloat>

#define FULL_MASK 0xffffffff

__global__ void row_max(const float* a, float* best, int n, int len)
{
    __shared__ float part[32];
    int row = blockIdx.x;
    int tid = threadIdx.x;
    if (row >= n) return;
    float m = -FLT_MAX;
    for (int j = tid; j < len; j = j + blockDim.x)
        m = fmaxf(m, a[row * len + j]);
    for (int step = warpSize / 2; step > 0; step >>= 1)
        m = fmaxf(m, __shfl_down_sync(FULL_MASK, m, step));
    if ((tid & 31) == 0) part[tid >> 5] = m;
    __syncthreads();
    float w = (tid < blockDim.x / warpSize) ? part[tid % 32] : -FLT_MAX;
    for (int step = warpSize / 2; step > 0; step >>= 1)
        w = fmaxf(w, __shfl_down_sync(FULL_MASK, w, step));
    if (tid == 0) best[row] = w;
}
