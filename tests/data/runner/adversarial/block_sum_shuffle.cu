// Correct rewrite: warp-shuffle reduction, then one warp sums the 8 warp totals. The additions
// happen in another order than the baseline's tree, so results differ in the last bits, well
// within the float32 tolerance. Launch with 256 threads per block and ceil(n / 256) blocks.
__global__ void block_sum(int n, const float* __restrict__ x, float* __restrict__ out)
{
    __shared__ float warp_sums[8];
    int t = threadIdx.x;
    int i = blockIdx.x * 256 + t;
    float v = i < n ? x[i] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    if ((t & 31) == 0) warp_sums[t >> 5] = v;
    __syncthreads();
    if (t < 32) {
        v = t < 8 ? warp_sums[t] : 0.0f;
        for (int offset = 4; offset > 0; offset >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, offset);
        if (t == 0) out[blockIdx.x] = v;
    }
}
