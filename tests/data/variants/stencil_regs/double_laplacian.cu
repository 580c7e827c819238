// Second difference of doubles with a size_t index and a step parameter; the ends copied and
// an early return for the threads past the end.
__global__ void laplace1d(const double* u, double* lap, size_t n, double inv_h2)
{
    const size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    if (k == 0 || k + 1 == n) {
        lap[k] = u[k];
        return;
    }
    lap[k] = (u[k - 1] - 2.0 * u[k] + u[k + 1]) * inv_h2;
}
