#include "include/helpers.cuh"

__global__ void axpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i]
}

__global__ void use_undefined(float* y) {
    y[threadIdx.x] = twice(y[threadIdx.x]) * undefined_scale;
}
