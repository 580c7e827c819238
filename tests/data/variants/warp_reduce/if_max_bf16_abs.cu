#include <cuda_bf16.h>

// Per-block maximum of |x| over bf16 values (a scale for quantization), dynamic shared
// memory sized by the launch (block.x floats); the tree's combine is a comparison.
__global__ void absmax_bf16(float* block_absmax, const __nv_bfloat16* x, int n)
{
    extern __shared__ float smax[];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + tid;
    smax[tid] = i < n ? fabsf(__bfloat162float(x[i])) : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride >= 1; stride /= 2) {
        if (tid < stride) {
            if (smax[tid + stride] > smax[tid]) {
                smax[tid] = smax[tid + stride];
            }
        }
        __syncthreads();
    }
    if (tid == 0) block_absmax[blockIdx.x] = smax[0];
}
