// Row normalization through dynamic shared memory declared as bytes and used as floats (the
// shape of kernels that carve several arrays out of one extern buffer).
__global__ void row_normalize(float* out, const float* inp, int rows, int cols) {
    extern __shared__ unsigned char smem[];
    float* row_buf = reinterpret_cast<float*>(smem);
    int r = blockIdx.x;
    if (r >= rows) return;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) row_buf[c] = inp[r * cols + c];
    __syncthreads();
    float first = row_buf[0] == 0.0f ? 1.0f : row_buf[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[r * cols + c] = row_buf[c] / first;
}

void normalize(float* out, const float* inp, int rows, int cols) {
    dim3 block(128);
    size_t smem_bytes = cols * sizeof(*out);
    row_normalize<<<rows, block, smem_bytes>>>(out, inp, rows, cols);
}
