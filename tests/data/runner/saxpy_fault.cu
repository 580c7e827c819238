// Faults: thread 0 stores to an address far outside any allocation (illegal address).
__global__ void saxpy(int n, float a, const float* x, const float* y, float* z)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = a * x[i] + y[i];
    if (i == 0) *(volatile float*)(z + (1ll << 40)) = 1.0f;
}
