// Wrong: correct z, but overwrites the input y at every index i with i % 1000 == 7.
__global__ void saxpy(int n, float a, const float* x, const float* y, float* z)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        z[i] = a * x[i] + y[i];
        if (i % 1000 == 7) const_cast<float*>(y)[i] = 0.0f;
    }
}
