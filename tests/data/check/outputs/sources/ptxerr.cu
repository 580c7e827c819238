__global__ void big(float* x) {
    __shared__ float tile[40000];
    tile[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = tile[threadIdx.x + 1];
}
__global__ void asmbad(int* x) {
    int v;
    asm volatile("mov.b32 %0, %%bogus;" : "=r"(v));
    x[0] = v;
}
