// Valid FIR over a padded input with the taps in a global array: y[i] = sum_k h[k] * x[i + k],
// x holding n + 4 elements; the tap index a loop variable read through a local.
__global__ void fir5(const float* x, const float* h, float* y, int n)
{
    int i = threadIdx.x + blockDim.x * blockIdx.x;
    if (i < n) {
        float acc = 0.0f;
        for (int k = 0; k < 5; ++k) {
            const int at = i + k;
            acc += h[k] * x[at];
        }
        y[i] = acc;
    }
}
