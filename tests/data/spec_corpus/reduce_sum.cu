// Block sums of a template element type; explicit instantiations pick the types built.
template <typename T, int BLOCK>
__global__ void reduce_sum(const T* in, T* partial, int n) {
    __shared__ T buf[BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * BLOCK * 2 + tid;
    T v = 0;
    if (i < n) v = in[i];
    if (i + BLOCK < n) v += in[i + BLOCK];
    buf[tid] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = buf[0];
}

template __global__ void reduce_sum<float, 256>(const float*, float*, int);
template __global__ void reduce_sum<int, 128>(const int*, int*, int);
