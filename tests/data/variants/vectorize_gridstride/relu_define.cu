// A #define'd activation and a ternary, the index declared const int.
#define RELU(v) ((v) > 0.0f ? (v) : 0.0f)

__global__ void relu_fwd(const float* __restrict__ in, float* __restrict__ out, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = RELU(in[i]);
}
