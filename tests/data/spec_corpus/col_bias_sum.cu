// Bias gradient: one block per output column, its threads striding over the rows, a shared
// reduction; the sizes are set in main and passed down through the launching function.
__global__ void col_bias_sum(float* dbias, const float* dout, int rows, int OC) {
    extern __shared__ float part[];
    int o = blockIdx.x;
    float s = 0.0f;
    for (int r = threadIdx.x; r < rows; r += blockDim.x) s += dout[r * OC + o];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) dbias[o] += part[0];
}

void bias_backward(float* dbias, const float* dout, int rows, int OC) {
    unsigned int threads = 256;
    col_bias_sum<<<OC, threads, threads * sizeof(float)>>>(dbias, dout, rows, OC);
}

int main() {
    int rows = 8 * 1024;
    int OC = 768 * 4;
    float* dbias = nullptr;
    float* dout = nullptr;
    bias_backward(dbias, dout, rows, OC);
    return 0;
}
