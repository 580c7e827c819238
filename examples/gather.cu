// Gather with a scale: out[i] = scale * src[idx[i]]. The index array must hold valid
// indices into src, which the spec's range() constraint guarantees.

__global__ void gather_scale(const float* src, const int* idx, float* out, float scale, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = scale * src[idx[i]];
    }
}
