// The column means of a data matrix (n observations of m variables), summed into mean[j]
// and divided in place, as a covariance kernel's first step does.
__global__ void column_means(const float* data, float* mean, float float_n, int m, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i;
    if (j < m) {
        mean[j] = 0.0;
        for (i = 0; i < n; i++)
            mean[j] += data[i * m + j];
        mean[j] /= float_n;
    }
}
