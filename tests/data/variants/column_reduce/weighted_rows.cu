// A weighted column sum (bias gradient style): a per-row weight read by every thread.
__global__ void weighted_colsum(const float* grad, const float* w, float* db, int batch, int features)
{
    int f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f < features) {
        float total = 0.0f;
        for (int b = 0; b < batch; ++b)
            total += w[b] * grad[b * features + f];
        db[f] = total;
    }
}
