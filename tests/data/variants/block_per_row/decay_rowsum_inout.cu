// Running row totals with decay: each row's total is scaled by the decay, then the row's
// new values are added into it (the total is read, then written).
__global__ void decayed_totals(const float* vals, float* total, float decay, int rows,
                               int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    total[r] *= decay;
    for (int c = 0; c < cols; ++c) {
        total[r] += vals[r * cols + c];
    }
}
