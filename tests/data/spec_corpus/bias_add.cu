#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;

// out[n, oc] += bias[oc] over N rows of OC channels.
__global__ void add_bias(floatX* out, const floatX* bias, int N, int OC) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = blockDim.x * gridDim.x;
    for (int i = idx; i < N * OC; i += stride) {
        int col = i % OC;
        out[i] = (floatX)((float)out[i] + (float)bias[col]);
    }
}

void bias(floatX* out, const floatX* b, int N, int OC) {
    add_bias<<<(N * OC + 255) / 256, 256>>>(out, b, N, OC);
}
