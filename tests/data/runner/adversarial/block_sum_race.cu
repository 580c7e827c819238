// Cheat: the same reduction with the barriers left out (a race). A thread reads its partner's
// slot whether or not the partner's warp has written it yet, so partial sums go missing.
__global__ void block_sum(int n, const float* x, float* out)
{
    __shared__ float s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * 256 + t;
    s[t] = i < n ? x[i] : 0.0f;
    for (int step = 128; step > 0; step >>= 1) {
        if (t < step) s[t] += s[t + step];
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
