template <typename T>
__global__ void scale(T* x, T s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * s + bias_for(x[i]);
}

void launch(float* x, int n) {
    scale<float><<<(n + 255) / 256, 256>>>(x, 2.0f, n);
}
