// Softmax over long rows with the maximum as `if (x > m) m = x;` on one line, then the sum
// of exponentials, then the normalized store: the online form fuses the first two loops.
__global__ void softmax_if_online(const float* __restrict__ inp, float* __restrict__ out,
                                  int N, int C)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < N) {
        const float* x = inp + (size_t)idx * C;
        float* y = out + (size_t)idx * C;
        float m = -INFINITY;
        for (int c = 0; c < C; ++c)
            if (x[c] > m) m = x[c];
        float s = 0.0f;
        for (int c = 0; c < C; ++c)
            s += expf(x[c] - m);
        const float inv = 1.0f / s;
        for (int c = 0; c < C; ++c)
            y[c] = expf(x[c] - m) * inv;
    }
}
