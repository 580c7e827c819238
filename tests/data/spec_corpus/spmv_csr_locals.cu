// y = A x for a CSR matrix, one row per thread, the row's bounds first loaded into locals
// (the shape of most hand-written SpMV kernels).
__global__ void spmv_rows(const float* vals, const int* cols, const int* row_offsets,
                          const float* x, float* y, int num_rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= num_rows) return;
    int row_start = row_offsets[row];
    int row_end = row_offsets[row + 1];
    float acc = 0.0f;
    for (int j = row_start; j < row_end; ++j) acc += vals[j] * x[cols[j]];
    y[row] = acc;
}

void spmv(const float* v, const int* c, const int* rp, const float* x, float* y, int rows) {
    const int threads = 256;
    spmv_rows<<<(rows + threads - 1) / threads, threads>>>(v, c, rp, x, y, rows);
}
