// Goes wrong after 20 launches: a device-global launch counter switches it to writing 0.
// Passes verification (fewer launches), fails the check after the timing loop.
__device__ unsigned int launches;

__global__ void saxpy(int n, float a, const float* x, const float* y, float* z)
{
    unsigned int seen = *(volatile unsigned int*)&launches;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = seen >= 20 ? 0.0f : a * x[i] + y[i];
    if (i == 0) atomicAdd(&launches, 1u);
}
