// saxpy with an unsigned index and an early return.
__global__ void saxpy_u(unsigned n, float a, const float* x, float* y)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = a * x[i] + y[i];
}
