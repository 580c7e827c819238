// CSR sparse matrix-vector product y = A x; only a real run knows A's structure.
__global__ void spmv_csr(int rows, const int* __restrict__ row_ptr,
                         const int* __restrict__ col_idx, const float* __restrict__ values,
                         const float* __restrict__ x, float* __restrict__ y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float sum = 0.0f;
        for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) {
            sum += values[j] * x[col_idx[j]];
        }
        y[row] = sum;
    }
}
