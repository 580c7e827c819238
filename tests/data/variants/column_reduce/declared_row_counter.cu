// Column means with the row counter declared before its loop (C89 style, as older HPC
// benchmark suites write it): thread j averages column j of a row-major matrix.
__global__ void column_mean(const float* data, float* mean, int n_rows, int n_cols)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n_cols) {
        int i;
        float acc = 0.0f;
        for (i = 0; i < n_rows; i++) {
            acc += data[i * n_cols + j];
        }
        mean[j] = acc / (float)n_rows;
    }
}
