#include <cuda_runtime.h>

__global__ void before(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.0f;
}

__global__ void broken(float* out, int n) {
  int i = threadIdx.x;
  if (i < n) {
    out[i] = 1.0f;
}

template <typename T>
__global__ void after(const T* __restrict__ in, T* out, int n) {
  int i = threadIdx.x;
  if (i < n) out[i] = in[i];
}

__global__ void last(int* flag) { *flag = 1; }

void run(float* a, int n) {
  before<<<1, n>>>(a, n);
  after<float><<<1, n>>>(a, a, n);
}
