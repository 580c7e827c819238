// size_t index, `+=`, output first.
__global__ void axpy_sz(float* y, const float* x, float alpha, size_t count)
{
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < count) {
        y[idx] += alpha * x[idx];
    }
}
