// Elementwise kernels in the shapes real code writes them; the optimizer's positive fixtures.
#include <cuda_runtime.h>

#define SQR(v) ((v) * (v))

// The textbook form.
__global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}

// Early return, const index, operands in the other order, a macro, a write-only output,
// the index used as a value.
__global__ void squares(float* out, const float* in, unsigned int n) {
    const int i = threadIdx.x + blockDim.x * blockIdx.x;
    if (i >= n) return;
    out[i] = SQR(in[i]) + (float)i;
}

// size_t index with a cast, "n > i", doubles, a local temporary, a conditional update of an
// in-out buffer, a single-statement guard body inside braces.
__global__ void daxpy_clamp(size_t n, double a, const double* x, double* y) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (n > i) {
        double t = a * x[i];
        if (t > 1.0) {
            t = 1.0;
        }
        y[i] += t;
    }
}

// A template instantiated for float, with an explicit instantiation to keep in step.
template <typename T>
__global__ void scale(T* y, T* x, T s, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) { return; }
    y[i] = s * x[i];
}
template __global__ void scale<float>(float*, float*, float, int);

// int elements, a prototype before the definition, a guard without braces.
__global__ void iadd(int* a, int* b, int* c, int n);

__global__ void iadd(int* a, int* b, int* c, int n)
{
	int i = blockIdx.x*blockDim.x + threadIdx.x;
	if (i < n) c[i] = a[i] + b[i];
}

void launch_all(int n, float* d_x, float* d_y, cudaStream_t stream) {
    saxpy<<<(n + 255) / 256, 256, 0, stream>>>(n, 2.0f, d_x, d_y);
    squares<<<(n + 127) / 128, 128>>>(d_y, d_x, (unsigned)n);
}
