// size_t indices, the leading dimensions through #define'd index macros, if-block guard.
#define AT(r, c, ld) ((r) * (ld) + (c))

__global__ void transpose_sz(const double* a, double* at, size_t n_rows, size_t n_cols)
{
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t r = (size_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (r < n_rows && c < n_cols) {
        at[AT(c, r, n_rows)] = a[AT(r, c, n_cols)];
    }
}
