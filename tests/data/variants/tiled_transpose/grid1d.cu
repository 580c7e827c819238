// A 1D grid over the 2D matrix: the thread's element split into row and column by / and %.
__global__ void transpose_flat(const float* in, float* out, int rows, int cols)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < rows * cols) {
        int r = idx / cols;
        int c = idx % cols;
        out[c * rows + r] = in[idx];
    }
}
