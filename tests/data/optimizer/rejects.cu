// Kernels on which some pass must not apply; each says which and why.
#include <cuda_runtime.h>

#define AXPY(k) y[k] = a * x[k] + y[k]
#define TILE 16

__device__ float load(const float* p, int k) { return p[k]; }

// Reduction through atomics: not elementwise.
__global__ void sum_atomic(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}

// Neighbour access: a stencil, not p[i].
__global__ void diff1(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = x[i] - x[i > 0 ? i - 1 : 0];
    }
}

// A write-only output written under a condition.
__global__ void relu_masked(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (x[i] > 0.0f) y[i] = x[i];
    }
}

// 2D kernel (a matrix transpose); the spec's block is 2D.
__global__ void transpose(const float* in, float* out, int w, int h) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (c < w && r < h) out[c * h + r] = in[r * w + c];
}

// Writes through a pointer the spec calls in.
__global__ void writes_input(float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = x[i];
        x[i] = 0.0f;
    }
}

// The input escapes into a device function.
__global__ void escapes(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = load(x, i);
}

// The memory accesses hide in a macro.
__global__ void macro_hidden(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { AXPY(i); }
}

// Already a grid-stride loop.
__global__ void strided(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = 2.0f * x[i];
}

// Tiled: a fixed-size shared array sized by the block.
__global__ void tiled_copy(const float* x, float* y, int n) {
    __shared__ float tile[TILE * TILE];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) tile[threadIdx.x] = x[i];
    __syncthreads();
    if (i < n) y[i] = tile[threadIdx.x];
}

// __launch_bounds__ caps the block at 128 threads.
__global__ void __launch_bounds__(128) bounded(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}

// The block size is a template parameter.
template <int BLOCK>
__global__ void block_templ(const float* x, float* y, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) y[i] = x[i];
}
template __global__ void block_templ<256>(const float*, float*, int);

// Fine kernel, but its only launch passes the same buffer twice.
__global__ void aliased(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

void run(int n, float* d) {
    aliased<<<(n + 255) / 256, 256>>>(n, 2.0f, d, (d));
}
