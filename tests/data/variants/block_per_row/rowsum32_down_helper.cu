// Row sums with one warp per block, as small-model inference code writes them: the 32
// threads of the block stride over the row by WARP_SIZE, a __device__ helper folds their
// partial sums down to lane 0, and thread 0 writes the row's sum (nrows: the grid's rows).
#define WARP_SIZE 32

static __device__ __forceinline__ float warp_fold_sum(float v)
{
#pragma unroll
    for (int delta = WARP_SIZE / 2; delta > 0; delta /= 2) {
        v += __shfl_down_sync(0xffffffff, v, delta, WARP_SIZE);
    }
    return v;
}

__global__ void sum_rows_f32(const float* x, float* dst, const int ncols, const int nrows)
{
    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    float total = 0.0f;
    for (int col = tid; col < ncols; col += WARP_SIZE) {
        total += x[row * ncols + col];
    }
    total = warp_fold_sum(total);
    if (tid == 0) {
        dst[row] = total;
    }
}
