// A byte histogram per block (shared-memory atomics over a grid-stride loop) written to the
// block's row of partial, then summed bin by bin over the PARTIALS rows.
#define BINS 256

__global__ void hist(unsigned int* partial, const unsigned char* data, int n) {
    __shared__ unsigned int s[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) s[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&s[data[i]], 1u);
    __syncthreads();
    for (int bin = threadIdx.x; bin < BINS; bin += blockDim.x)
        partial[blockIdx.x * BINS + bin] = s[bin];
}

__global__ void merge(unsigned int* hist_out, const unsigned int* partial, int partials) {
    int bin = blockIdx.x * blockDim.x + threadIdx.x;
    if (bin < BINS) {
        unsigned int sum = 0;
        for (int p = 0; p < partials; ++p) sum += partial[p * BINS + bin];
        hist_out[bin] = sum;
    }
}

void histogram(unsigned int* out, unsigned int* partial, const unsigned char* data, int n) {
    const int PARTIALS = 240;
    hist<<<PARTIALS, 192>>>(partial, data, n);
    merge<<<1, BINS>>>(out, partial, PARTIALS);
}
