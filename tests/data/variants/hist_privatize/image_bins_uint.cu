// An 8-bit image histogram: unsigned char pixels, a const unsigned int index, the bin count
// #define'd and applied as a modulo, an int literal added to unsigned counters.
#define NUM_BINS 256

__global__ void image_hist(const unsigned char* pixels, unsigned int num_pixels,
                           unsigned int* histo)
{
    const unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < num_pixels) {
        const unsigned int bin = pixels[tid] % NUM_BINS;
        atomicAdd(&histo[bin], 1);
    }
}
