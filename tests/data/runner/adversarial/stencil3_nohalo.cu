// Cheat: stages x in a shared tile but never loads the halo (tile[0] and tile[257]), so the
// first and last thread of every block read uninitialized shared memory. Launch with 256
// threads per block.
__global__ void stencil3(int n, const float* x, float* out)
{
    __shared__ float tile[256 + 2];
    int t = threadIdx.x;
    int i = blockIdx.x * 256 + t;
    tile[t + 1] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = tile[t] + tile[t + 1] + tile[t + 2];
}
