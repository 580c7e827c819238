// Row softmax over C columns, one block per row, a block-wide max and sum in dynamic shared
// memory sized at the launch.
__global__ void softmax_forward(float* out, const float* inp, int N, int C) {
    extern __shared__ float shared[];
    int row = blockIdx.x;
    int tid = threadIdx.x;
    if (row >= N) return;
    const float* x = inp + row * C;
    float m = -INFINITY;
    for (int c = tid; c < C; c += blockDim.x) m = fmaxf(m, x[c]);
    shared[tid] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (tid < s) shared[tid] = fmaxf(shared[tid], shared[tid + s]);
        __syncthreads();
    }
    float row_max = shared[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = tid; c < C; c += blockDim.x) sum += expf(x[c] - row_max);
    shared[tid] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (tid < s) shared[tid] += shared[tid + s];
        __syncthreads();
    }
    float total = shared[0];
    for (int c = tid; c < C; c += blockDim.x) out[row * C + c] = expf(x[c] - row_max) / total;
}

void softmax(float* out, const float* inp, int N, int C) {
    int block_size = 256;
    softmax_forward<<<N, block_size, block_size * sizeof(float)>>>(out, inp, N, C);
}
