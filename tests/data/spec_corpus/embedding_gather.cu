// Rows of an embedding table picked by an index array: out[i, :] = table[ids[i], :].
__global__ void embedding_gather(float* out, const float* table, const long* ids, int n, int D) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n * D) {
        int r = i / D;
        int d = i % D;
        long row = ids[r];
        out[i] = table[row * D + d];
    }
}
