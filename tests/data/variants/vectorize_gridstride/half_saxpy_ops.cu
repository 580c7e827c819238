// Half-precision saxpy with the type's operators and a half scalar.
#include <cuda_fp16.h>

__global__ void hsaxpy(int n, half a, const half* x, half* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
