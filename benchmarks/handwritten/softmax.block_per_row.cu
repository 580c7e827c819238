// Hand-written: one block per row, single-pass online softmax (running max, sum rescaled when
// it grows); (max, sum) pairs merged across each warp with xor shuffles, then across the warps
// through shared memory; a second pass writes the normalized row.
__global__ void softmax_rows(const float* x, float* y, int rows, int cols)
{
    __shared__ float wmax[32], wsum[32];
    int row = blockIdx.x;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float m = -INFINITY, s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = xr[c];
        if (v > m) {
            s = s * expf(m - v) + 1.0f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        float mo = __shfl_xor_sync(0xffffffff, m, offset);
        float so = __shfl_xor_sync(0xffffffff, s, offset);
        float mn = fmaxf(m, mo);
        s = (m == mn ? s : s * expf(m - mn)) + (mo == mn ? so : so * expf(mo - mn));
        m = mn;
    }
    if (lane == 0) { wmax[warp] = m; wsum[warp] = s; }
    __syncthreads();
    m = wmax[0];
    s = wsum[0];
    for (int w = 1; w < blockDim.x / 32; ++w) {
        float mn = fmaxf(m, wmax[w]);
        s = (m == mn ? s : s * expf(m - mn)) + (wmax[w] == mn ? wsum[w] : wsum[w] * expf(wmax[w] - mn));
        m = mn;
    }
    for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = expf(xr[c] - m) / s;
}
