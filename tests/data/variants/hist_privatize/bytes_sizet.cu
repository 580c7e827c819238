// A byte histogram: size_t index, unsigned char input, the bin read into a local first.
__global__ void byte_hist(const unsigned char* data, unsigned int* hist, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned char v = data[i];
        atomicAdd(&hist[v], 1u);
    }
}
