__global__ void fill(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int unused_count = 3;
    if (i < n) y[i] = 1.0f;
}
#warning "fill is a placeholder"
