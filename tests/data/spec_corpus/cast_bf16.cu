#include <cuda_bf16.h>

// float -> bfloat16, four elements per thread through a float4 load.
__global__ void cast_to_bf16(__nv_bfloat16* out, const float4* in, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = in[i];
        out[4 * i + 0] = __float2bfloat16(v.x);
        out[4 * i + 1] = __float2bfloat16(v.y);
        out[4 * i + 2] = __float2bfloat16(v.z);
        out[4 * i + 3] = __float2bfloat16(v.w);
    }
}
