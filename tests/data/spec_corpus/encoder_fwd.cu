#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;

// Token plus position embedding: out[b, t, c] = wte[inp[b, t], c] + wpe[t, c].
__global__ void encoder_forward(floatX* out, const int* inp, const floatX* wte,
                                const floatX* wpe, int B, int T, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < B * T * C) {
        int bt = idx / C;
        int t = bt % T;
        int c = idx % C;
        int ix = inp[bt];
        out[idx] = (floatX)((float)wte[ix * C + c] + (float)wpe[t * C + c]);
    }
}

void encoder(floatX* out, const int* inp, const floatX* wte, const floatX* wpe,
             int B, int T, int C) {
    int N = B * T * C;
    encoder_forward<<<(N + 255) / 256, 256>>>(out, inp, wte, wpe, B, T, C);
}
