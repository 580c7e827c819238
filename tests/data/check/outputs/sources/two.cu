__global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__device__ __noinline__ float helper(float* p, int k) {
    float buf[64];
    for (int j = 0; j < 64; ++j) buf[j] = p[j] * j;
    return buf[k & 63];
}

template <typename T>
__global__ void scale(T* x, T s, int n) {
    __shared__ T tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = x[i];
    __syncthreads();
    if (i < n) x[i] = tile[threadIdx.x] * s + helper((float*)x, i);
}
template __global__ void scale<float>(float*, float, int);
template __global__ void scale<double>(double*, double, int);

namespace ops { __global__ void add(float* a) { a[threadIdx.x] += 1.f; } }
extern "C" __global__ void cfun(float* a) { a[0] = 2.f; }
__constant__ float coef[16];
__global__ void usec(float* a) { a[threadIdx.x] *= coef[threadIdx.x & 15]; }
