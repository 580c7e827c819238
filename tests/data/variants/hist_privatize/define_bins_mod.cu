// A #define'd bin count, the bin as a modulo, the guard written bound first.
#define NUM_BINS 64

__global__ void mod_hist(int n, const unsigned int* x, unsigned int* bins)
{
    int tid = blockDim.x * blockIdx.x + threadIdx.x;
    if (n > tid) {
        unsigned int b = x[tid] % NUM_BINS;
        atomicAdd(&bins[b], 1);
    }
}
