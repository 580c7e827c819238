// Project header of the corpus kernels that include one (the shape of a training code's
// shared header: an element type alias, warp constants and small device helpers).
#pragma once
#include <cuda_bf16.h>

typedef __nv_bfloat16 floatX;
#define WARP_SIZE 32

__device__ inline float warp_sum(float v) {
    for (int off = WARP_SIZE / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}
