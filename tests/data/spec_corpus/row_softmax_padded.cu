// Softmax of each row of a rows x C matrix, one block per row. The row is cached in dynamic
// shared memory after a warp's worth of reduction slots; the host rounds C up to whole
// warps with a bit-mask macro and picks an instance per row length in a switch.
#include <math.h>

#define WARP 32
#define ROUND_WARP(x, n) (((x) + (n) - 1) & ~((n) - 1))

template <int cols_t, int threads_t>
__global__ void row_softmax_padded(float* out, const float* inp, int rows, int C) {
    extern __shared__ float smem[];
    float* red = smem;
    float* vals = smem + WARP;
    const int bs = threads_t == 0 ? blockDim.x : threads_t;
    int r = blockIdx.x;
    if (r >= rows) return;
    float mx = -INFINITY;
    for (int c = threadIdx.x; c < C; c += bs) {
        float v = inp[r * C + c];
        vals[c] = v;
        mx = fmaxf(mx, v);
    }
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
    if (threadIdx.x % WARP == 0) red[threadIdx.x / WARP] = mx;
    __syncthreads();
    mx = red[0];
    float s = 0.0f;
    for (int c = threadIdx.x; c < C; c += bs) {
        float e = expf(vals[c] - mx);
        vals[c] = e;
        s += e;
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    for (int c = threadIdx.x; c < C; c += bs) out[r * C + c] = vals[c] / s;
}

void row_softmax_padded_launch(float* out, const float* inp, int rows, int C, cudaStream_t st) {
    const size_t smem_bytes = (ROUND_WARP(C, WARP) + WARP) * sizeof(float);
    switch (C) {
        case 96:
            row_softmax_padded<96, 32><<<rows, 32, smem_bytes, st>>>(out, inp, rows, C);
            break;
        case 128:
            row_softmax_padded<128, 32><<<rows, 32, smem_bytes, st>>>(out, inp, rows, C);
            break;
        default:
            row_softmax_padded<0, 0><<<rows, 256, smem_bytes, st>>>(out, inp, rows, C);
            break;
    }
}
