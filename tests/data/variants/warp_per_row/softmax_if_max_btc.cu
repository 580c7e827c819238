// Softmax over the C channels of each of the B * T positions, one thread per position; the
// running maximum is a conditional assignment in braces and the normalizer is summed in
// double from the stored exponentials.
__global__ void softmax_btc_if(float* out, const float* inp, int N, int C)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        const float* x = inp + i * C;
        float* y = out + i * C;
        float maxval = -INFINITY;
        for (int j = 0; j < C; j++) {
            if (x[j] > maxval) {
                maxval = x[j];
            }
        }
        double sum = 0.0;
        for (int j = 0; j < C; j++) {
            y[j] = expf(x[j] - maxval);
            sum += y[j];
        }
        for (int j = 0; j < C; j++) {
            y[j] /= (float)sum;
        }
    }
}
