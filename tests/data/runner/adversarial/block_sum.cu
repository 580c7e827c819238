// Baseline: out[b] = sum of x over block b's 256 elements (a shared-memory tree reduction with
// a barrier after every step). Launch with 256 threads per block and ceil(n / 256) blocks.
__global__ void block_sum(int n, const float* x, float* out)
{
    __shared__ float s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * 256 + t;
    s[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int step = 128; step > 0; step >>= 1) {
        if (t < step) s[t] += s[t + step];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
