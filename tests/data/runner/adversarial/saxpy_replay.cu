// Cheat: caches its first result in device memory and replays it. Per element, the first
// call computes z = a * x + y and keeps it in a __device__ array with a flag; every later call
// copies the cached value, whatever the inputs now are.
#define CACHE_N (1 << 22)
__device__ float cache[CACHE_N];
__device__ unsigned char cached[CACHE_N];

__global__ void saxpy(int n, float a, const float* x, const float* y, float* z)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (i < CACHE_N && cached[i]) {
        z[i] = cache[i];
        return;
    }
    float v = a * x[i] + y[i];
    z[i] = v;
    if (i < CACHE_N) {
        cache[i] = v;
        cached[i] = 1;
    }
}
