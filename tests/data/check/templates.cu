// A template kernel instantiated twice, a template kernel never instantiated, and a
// recursive __device__ function that ptxas compiles as a real call with its own frame.
template <typename T>
__global__ void scale(T* x, T s, int n) {
    __shared__ T tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : T(0);
    __syncthreads();
    if (i < n) x[i] = tile[threadIdx.x] * s;
}
template __global__ void scale<float>(float*, float, int);
template __global__ void scale<int>(int*, int, int);

template <typename T>
__global__ void never_instantiated(T* x) { x[0] = T(1); }

__device__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__global__ void fib_kernel(int* out, const int* in) {
    out[threadIdx.x] = fib(in[threadIdx.x]);
}
