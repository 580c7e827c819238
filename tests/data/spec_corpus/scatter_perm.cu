// out[perm[i]] = in[i]: a scatter through a permutation (every slot written once).
__global__ void scatter_permute(float* out, const float* in, const int* perm, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[perm[i]] = in[i];
}
