// Early return, unsigned index, threadIdx first, the counter reached by pointer arithmetic.
__global__ void count_keys(unsigned int count, const int* keys, int* counts)
{
    unsigned int idx = threadIdx.x + blockIdx.x * blockDim.x;
    if (idx >= count) return;
    int k = keys[idx];
    atomicAdd(counts + k, 1);
}
