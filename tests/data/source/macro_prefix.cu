#define KERNEL_PREFIX
#define DECLARE_TABLE(name) __constant__ float name[16];
#define LB(n) __launch_bounds__(n)

KERNEL_PREFIX
__global__ void after_bare_macro(float* a) { a[0] = 0.f; }

DECLARE_TABLE(coeffs)
__global__ void after_macro_call(float* a, int n) { a[n] = coeffs[0]; }

__global__ void LB(256) macro_bounds(int* p) { p[0] = 1; }

__global__ void plain(int* p) { p[0] = 2; }
