#include "common.h"

__global__ void scale_tiles(const float* x, float* y, int n) {
    int i = blockIdx.x * TILE + threadIdx.x;
    if (i < n) {
        y[i] = twice(x[i]);
    }
}
