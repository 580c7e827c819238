// saxpy without its bounds check: the last block's threads past n read (and write) beyond the
// buffers. memcheck reports the out-of-bounds read at the marked line.
__global__ void saxpy_unchecked(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = a * x[i] + y[i];  // OOB: no i < n
}
