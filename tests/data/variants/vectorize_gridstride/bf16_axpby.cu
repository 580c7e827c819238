// bfloat16 axpby with the type's operators: y = alpha * x + beta * y.
#include <cuda_bf16.h>

__global__ void axpby_bf16(const __nv_bfloat16* x, __nv_bfloat16* y, __nv_bfloat16 alpha,
                           __nv_bfloat16 beta, int n)
{
    const int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n)
        y[i] = alpha * x[i] + beta * y[i];
}
