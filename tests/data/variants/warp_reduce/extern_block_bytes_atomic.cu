// A loss total over B * T positions: each block sums its threads' values in dynamic shared
// memory sized by the launch (block * sizeof(float) bytes, one float per thread) and thread 0
// adds the block's sum to the total; the tree halves from the block's size.
__global__ void loss_total(float* total, const float* losses, int BT)
{
    extern __shared__ float s[];
    int tid = threadIdx.x;
    int idx = blockIdx.x * blockDim.x + tid;
    s[tid] = idx < BT ? losses[idx] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x >> 1; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] = s[tid] + s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(total, s[0]);
}
