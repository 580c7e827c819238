// Per-block partial sums of a grid-stride loop written with multiply macros, on uint.
typedef unsigned int uint;
#define MUL(a, b) ((a) * (b))
#define MAD(a, b, c) (MUL((a), (b)) + (c))
#define THREADS 128

__global__ void hist_macro(uint* partial, const uint* data, uint count) {
    uint s = 0;
    for (uint pos = MAD(blockIdx.x, blockDim.x, threadIdx.x); pos < count;
         pos += MUL(blockDim.x, gridDim.x))
        s += data[pos] & 0xffu;
    partial[MAD(blockIdx.x, THREADS, threadIdx.x)] = s;
}

void run_hist(uint* partial, const uint* data, uint count) {
    hist_macro<<<(count + THREADS - 1) / THREADS, THREADS>>>(partial, data, count);
}
