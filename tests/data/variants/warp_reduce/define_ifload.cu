// A #define'd block size, the load as a zero store then a guarded one, explicit sums.
#define THREADS 256

__global__ void partial_sums(float* partial, const float* x, int count)
{
    __shared__ float cache[THREADS];
    int t = threadIdx.x;
    int g = blockIdx.x * THREADS + t;
    cache[t] = 0.0f;
    if (g < count) cache[t] = x[g];
    __syncthreads();
    for (int stride = THREADS / 2; stride > 0; stride /= 2) {
        if (t < stride) cache[t] = cache[t] + cache[t + stride];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = cache[0];
}
