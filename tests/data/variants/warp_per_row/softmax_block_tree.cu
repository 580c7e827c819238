// Softmax over the C channels of each of the N rows of a training activation, one block per
// row: the threads stride over the row, the row maximum and the normalizer are tree
// reductions over blockDim.x in dynamic shared memory sized by the launch.
__global__ void softmax_forward(float* out, const float* inp, int N, int C)
{
    extern __shared__ float shared[];
    int idx = blockIdx.x;
    int tid = threadIdx.x;
    const float* x = inp + idx * C;

    float maxval = -INFINITY;
    for (int i = tid; i < C; i += blockDim.x) {
        maxval = fmaxf(maxval, x[i]);
    }
    shared[tid] = maxval;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride >= 1; stride /= 2) {
        if (tid < stride) {
            shared[tid] = fmaxf(shared[tid], shared[tid + stride]);
        }
        __syncthreads();
    }
    float offset = shared[0];
    __syncthreads();

    float sumval = 0.0f;
    for (int i = tid; i < C; i += blockDim.x) {
        sumval += expf(x[i] - offset);
    }
    shared[tid] = sumval;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride >= 1; stride /= 2) {
        if (tid < stride) {
            shared[tid] += shared[tid + stride];
        }
        __syncthreads();
    }
    float sum = shared[0];

    for (int i = tid; i < C; i += blockDim.x) {
        out[idx * C + i] = expf(x[i] - offset) / sum;
    }
}
