// Per-block minimum over B * T * C activations, each thread first folding two elements; the
// tree keeps the left value unless the right one is smaller, written as a select.
__global__ void block_min_select(float* partial, const float* act, int total)
{
    __shared__ float lo[256];
    unsigned int t = threadIdx.x;
    unsigned int g = blockIdx.x * 512 + t;
    float a = g < total ? act[g] : INFINITY;
    float b = g + 256 < total ? act[g + 256] : INFINITY;
    lo[t] = (a < b) ? a : b;
    __syncthreads();
    for (unsigned int s = 128; s > 0; s >>= 1) {
        if (t < s) lo[t] = (lo[t] < lo[t + s]) ? lo[t] : lo[t + s];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = lo[0];
}
