// Sum of each row of a matrix, one block per row: the threads stride over the columns, each
// warp folds its partial sums with butterfly shuffles, lane 0 of every warp parks the warp's
// sum in shared memory, and every warp then folds the parked sums the same way.
__global__ void row_sums(float* __restrict__ sums, const float* __restrict__ m, int rows,
                         int cols)
{
    __shared__ float parked[32];
    const int r = blockIdx.x;
    const int lane = threadIdx.x % 32;
    const int wid = threadIdx.x / 32;
    if (r >= rows) return;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        acc += m[(size_t)r * cols + c];
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_xor_sync(0xffffffff, acc, o);
    if (lane == 0) parked[wid] = acc;
    __syncthreads();
    acc = (lane < blockDim.x / 32) ? parked[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1)
        acc += __shfl_xor_sync(0xffffffff, acc, o);
    if (threadIdx.x == 0) sums[r] = acc;
}
