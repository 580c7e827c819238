#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;

// (B, NH, N, d) -> (B, N, NH, d)
__global__ void unpermute_kernel(const floatX* inp, floatX* out, int B, int N, int NH, int d) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * NH * N * d) return;
    int b = idx / (NH * N * d);
    int nh = (idx / (N * d)) % NH;
    int n = (idx / d) % N;
    int dd = idx % d;
    out[b * N * NH * d + n * NH * d + nh * d + dd] = inp[idx];
}

void unpermute(const floatX* inp, floatX* out, int B, int N, int NH, int d) {
    unpermute_kernel<<<(B * NH * N * d + 255) / 256, 256>>>(inp, out, B, N, NH, d);
}
