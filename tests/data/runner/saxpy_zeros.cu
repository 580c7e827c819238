// Wrong: writes 0 everywhere (a constant output, which a loose tolerance would let pass).
__global__ void saxpy(int n, float a, const float* x, const float* y, float* z)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = 0.0f;
}
