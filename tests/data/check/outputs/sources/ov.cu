__device__ float f(float a, float b) { return a + b; }
__device__ float f(double a, double b) { return a + b; }
#define CALL(x) f(x)
__global__ void k(float* x) {
            x[0] = CALL(x);
}
template <int N> struct Deep { __device__ static int v() { return Deep<N-1>::v() + undefined_thing<N>; } };
template <> struct Deep<0> { __device__ static int v() { return 0; } };
__global__ void d(int* y) { y[0] = Deep<3>::v(); }
