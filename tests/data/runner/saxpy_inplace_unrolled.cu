// In-place saxpy, two elements per thread.
namespace blas {
__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = 2 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) y[i] = a * x[i] + y[i];
    if (i + 1 < n) y[i + 1] = a * x[i + 1] + y[i + 1];
}
}
