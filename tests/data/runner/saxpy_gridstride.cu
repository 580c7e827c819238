// Correct rewrite: grid-stride loop, meant for a different block size and a fixed grid.
__global__ void saxpy(int n, float a, const float* __restrict__ x, const float* __restrict__ y,
                      float* __restrict__ z)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        z[i] = a * x[i] + y[i];
}
