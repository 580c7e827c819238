// One partial sum per block of 256, with the classic bug: below stride 32 the warp goes on
// without a barrier (no __syncthreads, no __syncwarp), so a thread reads s[t + stride] while
// its neighbour may still be writing it. racecheck reports the race at the marked line.
__global__ void block_sum(const float* in, float* partial, int n)
{
    __shared__ float s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride >= 32; stride >>= 1) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t < 32) {
        for (int stride = 16; stride > 0; stride >>= 1) {
            s[t] += s[t + stride];  // RACE: no barrier between the steps
        }
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}
