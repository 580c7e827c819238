// Histogram of small non-negative integers: bins[v] += 1 for every input value v.
// Naive version: one thread per element and one global atomicAdd per element, so the
// threads of the whole grid contend for the same few hundred counters.

__global__ void histogram(const int* values, unsigned int* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&bins[values[i]], 1u);
    }
}
