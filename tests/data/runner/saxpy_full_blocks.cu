// Wrong on ragged sizes: only whole blocks work, so the tail past (n / blockDim.x) * blockDim.x
// is never written. Correct when n is a multiple of the block size.
__global__ void saxpy(int n, float a, const float* x, const float* y, float* z)
{
    if (blockIdx.x >= n / blockDim.x) return;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    z[i] = a * x[i] + y[i];
}
