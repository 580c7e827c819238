// histo_local: a per-thread array indexed at run time lives in local memory (stack frame).
__global__ void histo_local(const int* keys, int* out, int n) {
    int counts[64];
    for (int j = 0; j < 64; ++j) counts[j] = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) counts[keys[i] & 63] += 1;
    for (int j = 0; j < 64; ++j) atomicAdd(&out[j], counts[j]);
}

// many_live: 48 values live at once, but 1024 threads x 2 blocks per SM leave each
// thread 32 registers, so ptxas spills.
__global__ void __launch_bounds__(1024, 2) many_live(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc[48];
#pragma unroll
    for (int k = 0; k < 48; ++k) acc[k] = x[(i + k * 977) % n];
#pragma unroll
    for (int r = 0; r < 8; ++r) {
#pragma unroll
        for (int k = 0; k < 48; ++k) acc[k] = acc[k] * acc[(k + r + 1) % 48] + 1.0f;
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 48; ++k) s += acc[k] * (k + 1);
    y[i] = s;
}
