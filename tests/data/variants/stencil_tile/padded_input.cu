// Valid convolution over a padded input: out[i] = sum_k w[k] * in[i + k], in holds n + TAPS - 1
// elements, weights in a constant local array.
#define TAPS 7

__global__ void fir_valid(const float* in, float* out, int n)
{
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    const float w[TAPS] = {1.f, 2.f, 3.f, 4.f, 3.f, 2.f, 1.f};
    if (idx < n) {
        float acc = 0.f;
        #pragma unroll
        for (int k = 0; k < TAPS; ++k) acc += w[k] * in[idx + k];
        out[idx] = acc / 16.f;
    }
}
