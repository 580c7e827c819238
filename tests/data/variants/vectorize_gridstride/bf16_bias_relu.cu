// bf16 bias + ReLU computed in float (nv_bfloat16 spelling, size_t index, early return).
#include <cuda_bf16.h>

__global__ void bias_relu_bf16(const nv_bfloat16* in, const nv_bfloat16* bias,
                               nv_bfloat16* out, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = __float2bfloat16(fmaxf(__bfloat162float(in[i]) + __bfloat162float(bias[i]), 0.0f));
}
