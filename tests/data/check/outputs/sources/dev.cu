__device__ __noinline__ float pick(const float* p, int k) {
    float buf[32];
    for (int j = 0; j < 32; ++j) buf[j] = p[j] * j;
    return buf[k & 31];
}
__device__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__global__ void a(const float* x, float* y) { y[threadIdx.x] = pick(x, threadIdx.x); }
__global__ void b(const float* x, float* y, int* z) { y[threadIdx.x] = pick(x, threadIdx.x + 1); z[0] = fib(z[1]); }
