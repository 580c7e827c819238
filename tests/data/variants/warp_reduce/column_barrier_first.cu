// Column sums of a rows x cols matrix, a block per column: each thread strides down the
// column by the block's size, then a tree whose rounds open with the barrier; the shared
// array is sized by the launch (block.x floats).
__global__ void column_totals(float* totals, const float* m, int rows, int cols)
{
    extern __shared__ float part[];
    int c = blockIdx.x;
    int t = threadIdx.x;
    int nthreads = blockDim.x;
    float acc = 0.0f;
    for (int r = t; r < rows; r += nthreads) {
        acc += m[r * cols + c];
    }
    part[t] = acc;
    __syncthreads();
    for (int half = nthreads / 2; half > 0; half /= 2) {
        __syncthreads();
        if (t < half) {
            part[t] += part[t + half];
        }
    }
    if (t == 0) {
        totals[c] = totals[c] + part[0];
    }
}
