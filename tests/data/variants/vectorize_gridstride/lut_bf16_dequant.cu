#include <cuda_bf16.h>

// Dequantize through a codebook: each code picks a bfloat16 centroid, widened to float
// and scaled.
__global__ void dequant_lut(const __nv_bfloat16* codebook, const int* codes, float* out,
                            float scale, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const int c = codes[i];
        out[i] = __bfloat162float(codebook[c]) * scale;
    }
}
