#include <cuda_fp8.h>

// Scale and round to float8 (e4m3), saturating.
__global__ void quantize_fp8(__nv_fp8_e4m3* out, const float* in, float scale, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __nv_fp8_e4m3(in[i] * scale);
}

void quantize(__nv_fp8_e4m3* out, const float* in, int n) {
    quantize_fp8<<<(n + 255) / 256, 256>>>(out, in, 64.0f, n);
}
