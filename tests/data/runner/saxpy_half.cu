// Wrong: writes only the first half of z (elements n/2 and up stay unwritten).
__global__ void saxpy(int n, float a, const float* x, const float* y, float* z)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) z[i] = a * x[i] + y[i];
}
