// Doubles, an explicit sum 'a = a + b', the partner written first, an if/else load.
__global__ void dsum(const double* a, double* sums, unsigned int len)
{
    __shared__ double buf[128];
    unsigned int t = threadIdx.x;
    unsigned int g = blockDim.x * blockIdx.x + t;
    if (g < len)
        buf[t] = a[g];
    else
        buf[t] = 0.0;
    __syncthreads();
    for (unsigned int half = 64; half > 0; half = half / 2) {
        if (t < half) {
            buf[t] = buf[t + half] + buf[t];
        }
        __syncthreads();
    }
    if (t == 0) {
        sums[blockIdx.x] = buf[0];
    }
}
