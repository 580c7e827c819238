// Sum of squares of a gradient vector, accumulated into out[0] by every block.
__global__ void global_norm_squared(float* out, const float* data, size_t count) {
    float acc = 0.0f;
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (size_t)blockDim.x * gridDim.x) {
        acc += data[i] * data[i];
    }
    for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (threadIdx.x % 32 == 0) atomicAdd(out, acc);
}

void norm(float* out, const float* g, size_t n) {
    global_norm_squared<<<(n + 511) / 512, 512>>>(out, g, n);
}
