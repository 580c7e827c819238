// Counting set bytes per block of 512: uint8 flags, the bound written 'len > g', a
// conditional on the comparison, a halving loop from a constant.
__global__ void count_flags(const unsigned char* flags, unsigned int* counts, unsigned int len)
{
    __shared__ unsigned int cnt[512];
    unsigned int t = threadIdx.x;
    unsigned int g = blockIdx.x * 512 + t;
    cnt[t] = len > g ? (flags[g] != 0 ? 1u : 0u) : 0u;
    __syncthreads();
    for (unsigned int half = 256; half > 0; half /= 2) {
        if (t < half) cnt[t] = cnt[t] + cnt[t + half];
        __syncthreads();
    }
    if (t == 0) counts[blockIdx.x] = cnt[0];
}
