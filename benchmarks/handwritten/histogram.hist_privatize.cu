// Hand-written: per-block shared-memory histogram, int4 loads in a grid-stride loop where
// values is 16-byte aligned (an offset pointer need not be), scalar loads otherwise and for
// the ragged tail.
__global__ void histogram(const int* values, unsigned int* bins, int n)
{
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    int stride = gridDim.x * blockDim.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (reinterpret_cast<size_t>(values) % 16 == 0) {
        for (int v = i; v < n / 4; v += stride) {
            int4 q = reinterpret_cast<const int4*>(values)[v];
            atomicAdd(&local[q.x], 1u);
            atomicAdd(&local[q.y], 1u);
            atomicAdd(&local[q.z], 1u);
            atomicAdd(&local[q.w], 1u);
        }
        i += n / 4 * 4;
    }
    for (; i < n; i += stride) atomicAdd(&local[values[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (local[b]) atomicAdd(&bins[b], local[b]);
}
