#include <cuda_bf16.h>

// Log-sum-exp of bf16 logits, one row of V vocabulary entries per (b, t) position; the
// maximum is a select with the new value first, the logits widened to float in each loop.
__global__ void lse_bf16_select(float* lse, const __nv_bfloat16* logits, int BT, int V)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= BT) return;
    const __nv_bfloat16* z = logits + (size_t)row * V;
    float m = -INFINITY;
    for (int v = 0; v < V; v++) {
        float zv = __bfloat162float(z[v]);
        m = (zv > m) ? zv : m;
    }
    float s = 0.0f;
    for (int v = 0; v < V; v++) {
        float zv = __bfloat162float(z[v]);
        s += expf(zv - m);
    }
    lse[row] = m + logf(s);
}
