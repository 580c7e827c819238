// Fixture for the language server's diagnostics: one warning, one error, known places.
__global__ void scale(int n, float s, float* y)
{
    int unused = 3;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { /* ×2 → 🚀 */ y[i] = s * y[i] * missing_factor; }
}
