// Indices declared y first, other parameter names, a scale applied on the way.
__global__ void scaled_transpose(int n, int m, float alpha, const float* __restrict__ A,
                                 float* __restrict__ B)
{
    const int i = threadIdx.y + blockIdx.y * blockDim.y;
    const int j = threadIdx.x + blockIdx.x * blockDim.x;
    if (i < n && j < m)
        B[j * n + i] = alpha * A[i * m + j];
}
