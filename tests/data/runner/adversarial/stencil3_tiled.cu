// Correct rewrite: a shared tile with its halo, and the sum taken right to left
// ((x[i+1] + x[i]) + x[i-1]): reordered arithmetic, within the float32 tolerance. Launch with
// 256 threads per block.
__global__ void stencil3(int n, const float* __restrict__ x, float* __restrict__ out)
{
    __shared__ float tile[256 + 2];
    int t = threadIdx.x;
    int start = blockIdx.x * 256;
    int i = start + t;
    tile[t + 1] = i < n ? x[i] : 0.0f;
    if (t == 0) tile[0] = start > 0 ? x[start - 1] : 0.0f;
    if (t == 255) tile[257] = start + 256 < n ? x[start + 256] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = (tile[t + 2] + tile[t + 1]) + tile[t];
}
