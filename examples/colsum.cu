// Column sums of a row-major rows x cols matrix: out[c] = sum over r of a[r * cols + c].
// Naive version: one thread per column walks all rows. The reads are coalesced (neighbouring
// threads read neighbouring columns), but only cols threads run, each one load at a time.

__global__ void colsum(const float* a, float* out, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float sum = 0.0f;
        for (int r = 0; r < rows; ++r)
            sum += a[r * cols + c];
        out[c] = sum;
    }
}
