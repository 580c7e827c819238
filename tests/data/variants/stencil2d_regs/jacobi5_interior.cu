// One Jacobi sweep of the 2D Laplace equation: each interior point becomes the mean of its
// four neighbours; x, y named after the axes, the flat index in a local, the boundary left
// untouched by an interior guard (it keeps the previous sweep's values: inout).
__global__ void jacobi_step(const float* u, float* u_new, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x > 0 && x < nx - 1 && y > 0 && y < ny - 1) {
        int idx = y * nx + x;
        u_new[idx] = 0.25f * (u[idx - 1] + u[idx + 1] + u[idx - nx] + u[idx + nx]);
    }
}
