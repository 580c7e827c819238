// Five-point Laplacian of a double-precision field with a grid-spacing parameter; the
// boundary set to zero, the threads past the edge returning first; i runs along columns.
__global__ void laplacian5(const double* __restrict__ f, double* __restrict__ lap,
                           int nx, int ny, double inv_h2)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= nx || j >= ny) return;
    if (i == 0 || j == 0 || i == nx - 1 || j == ny - 1) {
        lap[j * nx + i] = 0.0;
        return;
    }
    const double c = f[j * nx + i];
    lap[j * nx + i] = (f[j * nx + i - 1] + f[j * nx + i + 1] + f[(j - 1) * nx + i] +
                       f[(j + 1) * nx + i] - 4.0 * c) * inv_h2;
}
