// Nondeterministic: adds a few ulps of noise taken from the SM clock, well within tolerance
// of the baseline but different from one run to the next.
__global__ void saxpy(int n, float a, const float* x, const float* y, float* z)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = a * x[i] + y[i] + (float)((clock64() >> 2) & 15) * 1e-6f;
}
