// Per-feature maxima of a batch of samples (a max-pooling over the batch axis): the running
// maximum is a comparison in braces, the sample read once into a local.
#include <cfloat>

__global__ void feature_max(const float* __restrict__ act, float* __restrict__ peak,
                            int batch, int features)
{
    int f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= features) return;
    float best = -FLT_MAX;
    for (int b = 0; b < batch; ++b) {
        if (act[b * features + f] > best) {
            best = act[b * features + f];
        }
    }
    peak[f] = best;
}
