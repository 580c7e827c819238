// size_t indices, the element through an index macro, the guard written bound first.
#define AT(r, c, ld) ((r) * (ld) + (c))

__global__ void col_totals(const float* x, float* totals, size_t rows, size_t cols)
{
    size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (cols > j) {
        float acc = 0.f;
        for (size_t i = 0; i < rows; ++i)
            acc += x[AT(i, j, cols)];
        totals[j] = acc;
    }
}
