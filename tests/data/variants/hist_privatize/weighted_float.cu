// A weighted histogram: float bins, the value added read from a second input.
__global__ void weighted_hist(const int* __restrict__ label, const float* __restrict__ weight,
                              float* __restrict__ total, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&total[label[i]], weight[i]);
}
