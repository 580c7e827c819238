#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;

// One block per row of C channels; the row index is (b, t) flattened.
__global__ void layernorm_forward(floatX* out, float* mean, float* rstd, const floatX* inp,
                                  const floatX* weight, const floatX* bias, int N, int C) {
    int row = blockIdx.x;
    if (row >= N) return;
    const floatX* x = inp + row * C;
    __shared__ float part[32];
    float s = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) s += (float)x[c];
    for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = s;
    __syncthreads();
    float m = 0.0f;
    for (int w = 0; w < blockDim.x / 32; w++) m += part[w];
    m /= C;
    __syncthreads();
    float v = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) { float d = (float)x[c] - m; v += d * d; }
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
    __syncthreads();
    float var = 0.0f;
    for (int w = 0; w < blockDim.x / 32; w++) var += part[w];
    float r = rsqrtf(var / C + 1e-5f);
    floatX* o = out + row * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float n = ((float)x[c] - m) * r;
        o[c] = (floatX)(n * (float)weight[c] + (float)bias[c]);
    }
    if (threadIdx.x == 0) { mean[row] = m; rstd[row] = r; }
}

void launch_layernorm(floatX* out, float* mean, float* rstd, const floatX* inp,
                      const floatX* w, const floatX* b, int B, int T, int C) {
    const int block_size = 256;
    layernorm_forward<<<B * T, block_size>>>(out, mean, rstd, inp, w, b, B * T, C);
}
