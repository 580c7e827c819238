__global__ void read_bogus(int* x) {
    int v;
    // %bogus is not a PTX register: ptxas rejects the generated PTX.
    asm volatile("mov.b32 %0, %%bogus;" : "=r"(v));
    x[threadIdx.x] = v;
}
