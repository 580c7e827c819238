__global__ void big(float* x) {
    __shared__ float tile[40000];
    tile[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = tile[threadIdx.x + 1];
}
