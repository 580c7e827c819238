// Row softmax, one thread per row (the naive form of training codes): the exponentials are
// stored in out first, then out is scaled by the inverse of their sum.
__global__ void softmax_naive(float* out, const float* inp, int N, int C) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N) {
        const float* x = inp + row * C;
        float* y = out + row * C;
        float row_max = -INFINITY;
        for (int c = 0; c < C; c++) row_max = fmaxf(row_max, x[c]);
        float sum = 0.0f;
        for (int c = 0; c < C; c++) {
            y[c] = expf(x[c] - row_max);
            sum += y[c];
        }
        float inv_sum = 1.0f / sum;
        for (int c = 0; c < C; c++) y[c] *= inv_sum;
    }
}

void softmax(float* out, const float* inp, int N, int C) {
    softmax_naive<<<(N + 63) / 64, 64>>>(out, inp, N, C);
}
