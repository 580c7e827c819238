// Hand-written half2 saxpy, for the line count of the vectorize_gridstride rewrite of
// tests/data/variants/vectorize_gridstride/half_saxpy_ops.cu (the pass's half-precision form).
#include <cuda_fp16.h>

__global__ void hsaxpy(int n, half a, const half* x, half* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    if (reinterpret_cast<size_t>(x) % 4 == 0 && reinterpret_cast<size_t>(y) % 4 == 0) {
        const half2 a2 = __half2half2(a);
        const half2* x2 = reinterpret_cast<const half2*>(x);
        half2* y2 = reinterpret_cast<half2*>(y);
        for (int v = i; v < n / 2; v += stride) y2[v] = __hfma2(a2, x2[v], y2[v]);
        i += n / 2 * 2;
    }
    for (; i < n; i += stride) y[i] = a * x[i] + y[i];
}
