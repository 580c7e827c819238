#include "include/bad_header.cuh"

__global__ void add_one(float* x) { x[threadIdx.x] = plus_one(x[threadIdx.x]); }
