// y = A x + y for a CSR matrix, summing straight into y[i] inside the loop over the row's
// entries (the loop's bounds read from the row pointers in its header).
__global__ void csr_axpy(const unsigned* starts, const unsigned* cols, const float* a,
                         const float* v, float* y, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        for (unsigned k = starts[i]; k < starts[i + 1]; k++)
            y[i] += a[k] * v[cols[k]];
    }
}
