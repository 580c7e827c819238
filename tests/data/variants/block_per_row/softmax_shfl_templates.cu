// Softmax over long rows, one block per row: template warp helpers fold a value across the
// 32 lanes with butterfly shuffles; each reduction is two-level (every warp folds, parks its
// result, and every warp folds the parked results), first the row maximum, then the sum of
// the exponentials.
template <typename T>
__device__ T warp_max_all(T v)
{
    for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, off));
    return v;
}

template <typename T>
__device__ T warp_sum_all(T v)
{
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffff, v, off);
    return v;
}

__global__ void softmax_rows(float* out, const float* in, int rows, int C)
{
    __shared__ float stash[32];
    int row = blockIdx.x;
    int tid = threadIdx.x;
    int lane = tid & 31;
    int warp = tid >> 5;
    const float* src = in + row * C;

    float mx = -INFINITY;
    for (int i = tid; i < C; i += blockDim.x) mx = fmaxf(mx, src[i]);
    mx = warp_max_all<float>(mx);
    if (lane == 0) stash[warp] = mx;
    __syncthreads();
    mx = (lane < (blockDim.x >> 5)) ? stash[lane] : -INFINITY;
    mx = warp_max_all<float>(mx);
    __syncthreads();

    float s = 0.0f;
    for (int i = tid; i < C; i += blockDim.x) s += expf(src[i] - mx);
    s = warp_sum_all<float>(s);
    if (lane == 0) stash[warp] = s;
    __syncthreads();
    s = (lane < (blockDim.x >> 5)) ? stash[lane] : 0.0f;
    s = warp_sum_all<float>(s);

    for (int i = tid; i < C; i += blockDim.x) out[row * C + i] = expf(src[i] - mx) / s;
}
