// Realistic shapes: several kernels, templates, launch bounds, extern "C", namespaces,
// macros in bodies, a __device__ helper and host code that launches the kernels.
#include <cuda_runtime.h>

#define IDX(r, c) ((r) * cols + (c))
#define CUDA_KERNEL_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
#define SYNC_ALL() __syncthreads();

__device__ __forceinline__ float square(float v) { return v * v; }

__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

template <typename T, int BLOCK>
__global__ void __launch_bounds__(256, 2) reduce_sum(const T* __restrict__ in, T* out, const int n) {
  __shared__ T tile[BLOCK];
  tile[threadIdx.x] = threadIdx.x < n ? in[threadIdx.x] : T(0);
  SYNC_ALL()
  if (threadIdx.x == 0) *out = tile[0];
}

__global__ void transpose(float const * src, float *__restrict dst, int rows, int cols) {
  int r = blockIdx.y, c = threadIdx.x;
  dst[c * rows + r] = src[IDX(r, c)];
}

__global__ void grid_stride(float * __restrict__ data, volatile int* flag, unsigned int n) {
  CUDA_KERNEL_LOOP(i, n) {
    data[i] = square(data[i]);
  }
  if (threadIdx.x == 0) *flag = 1;
}

extern "C" {
__global__ void c_fill(float* __restrict__ const out, float value, size_t count) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < count) out[i] = value;
}
}

extern "C" __global__ void __launch_bounds__(128) c_scale(double* v, double s) { v[threadIdx.x] *= s; }

namespace ops {
namespace detail {
static __global__ void zero(int* p) { p[threadIdx.x] = 0; }
}  // namespace detail

template <typename T>
__global__ void copy(const T* in, T* out, int n) {
  int i = threadIdx.x;
  if (i < n) out[i] = in[i];
}
}  // namespace ops

__global__ void declared_only(float* x);

void launch_all(float* x, float* y, int n, cudaStream_t stream) {
  saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
  reduce_sum<float, 256><<<1, 256, 256 * sizeof(float), stream>>>(x, y, n);
  transpose<<<dim3(n, 1), dim3(32), 0>>>(x, y, n, 32);
  ops::copy<float><<<1, n, 0, stream>>>(x, y, n);
  c_fill<<<4, 128>>>(y, 0.f, static_cast<size_t>(n));
}
