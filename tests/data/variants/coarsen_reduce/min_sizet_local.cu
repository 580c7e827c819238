// size_t indices, the value through a local, fminf, the loop limit a constant 256.
__global__ void block_min(const float* values, float* mins, size_t count)
{
    __shared__ float lo[256];
    const size_t t = threadIdx.x;
    const size_t k = (size_t)blockIdx.x * blockDim.x + t;
    float m = INFINITY;
    if (k < count) m = values[k];
    lo[t] = m;
    __syncthreads();
    for (size_t st = 128; st >= 1; st >>= 1) {
        if (t < st) lo[t] = fminf(lo[t], lo[t + st]);
        __syncthreads();
    }
    if (t == 0) mins[blockIdx.x] = lo[0];
}
