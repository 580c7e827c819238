#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;
#define GELU_SCALE 0.7978845608f

__global__ void gelu_forward(floatX* out, const floatX* inp, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = (float)inp[i];
        float cube = 0.044715f * x * x * x;
        out[i] = (floatX)(0.5f * x * (1.0f + tanhf(GELU_SCALE * (x + cube))));
    }
}

void gelu(floatX* out, const floatX* inp, int N) {
    int threads = 128;
    gelu_forward<<<(N + threads - 1) / threads, threads>>>(out, inp, N);
}
