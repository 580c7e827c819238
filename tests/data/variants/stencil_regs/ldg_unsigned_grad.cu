// Centred gradient read through __ldg with an unsigned index; one-sided differences at the
// two ends, a scale parameter, the threads past the end returning first.
__global__ void gradient(const float* f, float* g, unsigned int n, float half_inv_h)
{
    unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    if (t == 0) {
        g[t] = 2.0f * (__ldg(&f[t + 1]) - __ldg(&f[t])) * half_inv_h;
    } else if (t == n - 1) {
        g[t] = 2.0f * (__ldg(&f[t]) - __ldg(&f[t - 1])) * half_inv_h;
    } else {
        g[t] = (__ldg(&f[t + 1]) - __ldg(&f[t - 1])) * half_inv_h;
    }
}
