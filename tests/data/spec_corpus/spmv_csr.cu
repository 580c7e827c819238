// y = A x for a square CSR matrix, one row per thread.
__global__ void spmv_csr(int rows, const int* row_ptr, const int* col_idx, const float* values,
                         const float* x, float* y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float sum = 0.0f;
        for (int j = row_ptr[row]; j < row_ptr[row + 1]; j++) sum += values[j] * x[col_idx[j]];
        y[row] = sum;
    }
}

void spmv(int rows, const int* rp, const int* ci, const float* v, const float* x, float* y) {
    spmv_csr<<<(rows + 127) / 128, 128>>>(rows, rp, ci, v, x, y);
}
