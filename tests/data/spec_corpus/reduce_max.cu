#include <cfloat>
// Grid-stride maximum per block; the launch names the instance.
template <typename T>
__global__ void reduce_max(const T* __restrict__ x, T* __restrict__ block_max, int n) {
    __shared__ float s[256];
    float m = -FLT_MAX;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        m = fmaxf(m, (float)x[i]);
    s[threadIdx.x] = m;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k /= 2) {
        if (threadIdx.x < k) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + k]);
        __syncthreads();
    }
    if (threadIdx.x == 0) block_max[blockIdx.x] = (T)s[0];
}

void max_of(const float* x, float* out, int n) {
    reduce_max<float><<<(n + 255) / 256, 256>>>(x, out, n);
}
