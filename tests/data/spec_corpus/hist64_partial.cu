#define BIN_COUNT 64
#define HIST_THREADS 64
#define PARTIAL_COUNT 240
#define UMUL(a, b) ((a) * (b))
#define UMAD(a, b, c) (UMUL((a), (b)) + (c))

// One 64-bin histogram per block of the top 6 bits of every byte of data (16 bytes a uint4),
// counted in shared memory over a grid-stride loop and written to the block's row of partial:
// PARTIAL_COUNT rows of BIN_COUNT, merged by a later kernel. count is in uint4s.
__device__ void count_word(unsigned int* hist, unsigned int w) {
    atomicAdd(&hist[(w >> 2) & 0x3FU], 1u);
    atomicAdd(&hist[(w >> 10) & 0x3FU], 1u);
    atomicAdd(&hist[(w >> 18) & 0x3FU], 1u);
    atomicAdd(&hist[(w >> 26) & 0x3FU], 1u);
}

__global__ void hist64_partial(unsigned int* partial, const uint4* data, unsigned int count) {
    __shared__ unsigned int s_hist[BIN_COUNT];
    for (unsigned int b = threadIdx.x; b < BIN_COUNT; b += blockDim.x) s_hist[b] = 0;
    __syncthreads();
    for (unsigned int pos = UMAD(blockIdx.x, blockDim.x, threadIdx.x); pos < count;
         pos += UMUL(blockDim.x, gridDim.x)) {
        uint4 v = data[pos];
        count_word(s_hist, v.x);
        count_word(s_hist, v.y);
        count_word(s_hist, v.z);
        count_word(s_hist, v.w);
    }
    __syncthreads();
    if (threadIdx.x < BIN_COUNT) partial[blockIdx.x * BIN_COUNT + threadIdx.x] = s_hist[threadIdx.x];
}

void hist64(unsigned int* partial, const uint4* data, unsigned int bytes) {
    hist64_partial<<<PARTIAL_COUNT, HIST_THREADS>>>(partial, data, bytes / 16);
}
