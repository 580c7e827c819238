// y = A x for a CSR matrix: the row's extent loaded into locals, the dot product in a local,
// one store per row.
__global__ void csr_spmv(const int* row_off, const int* col_of, const float* val,
                         const float* x, float* y, int rows)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const int first = row_off[r];
    const int last = row_off[r + 1];
    float dot = 0.0f;
    for (int e = first; e < last; ++e) {
        dot += val[e] * x[col_of[e]];
    }
    y[r] = dot;
}
