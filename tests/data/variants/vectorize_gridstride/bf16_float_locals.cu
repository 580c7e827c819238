// bfloat16 storage, float arithmetic in locals (a sigmoid-approximated GELU); no float buffer
// or scalar in the spec.
#include <cuda_bf16.h>

__global__ void gelu_sig_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __bfloat162float(x[i]);
        float g = v / (1.0f + expf(-1.702f * v));
        y[i] = __float2bfloat16(g);
    }
}
