// Row softmax with one block per row, the row reached as pointers from blockIdx.x widened to
// size_t, an unsigned thread index, and the running maximum (in the loop and in the tree)
// written as a comparison; the exponentials are recomputed for the store.
__global__ void softmax_forward(float* out, const float* inp, int N, int C)
{
    extern __shared__ float shared[];
    unsigned tid = threadIdx.x;
    const float* x = inp + (size_t)blockIdx.x * C;
    float* y = out + (size_t)blockIdx.x * C;

    float m = -INFINITY;
    for (unsigned i = tid; i < C; i += blockDim.x) {
        float v = x[i];
        if (v > m) m = v;
    }
    shared[tid] = m;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            if (shared[tid + stride] > shared[tid]) shared[tid] = shared[tid + stride];
        }
        __syncthreads();
    }
    float row_max = shared[0];
    __syncthreads();

    float total = 0.0f;
    for (unsigned i = tid; i < C; i += blockDim.x) {
        total += expf(x[i] - row_max);
    }
    shared[tid] = total;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            shared[tid] = shared[tid] + shared[tid + stride];
        }
        __syncthreads();
    }
    float norm = 1.0f / shared[0];

    for (unsigned i = tid; i < C; i += blockDim.x) {
        y[i] = expf(x[i] - row_max) * norm;
    }
}
