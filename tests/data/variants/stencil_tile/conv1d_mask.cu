// 1D convolution with a mask in global memory: the window starts at i - MASK_WIDTH / 2, each
// tap guarded by the bounds (zero padding), the store guarded at the end.
#define MASK_WIDTH 5

__global__ void conv1d(const float* input, const float* mask, float* output, int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int start = i - MASK_WIDTH / 2;
    float value = 0.0f;
    for (int j = 0; j < MASK_WIDTH; j++) {
        int p = start + j;
        if (p >= 0 && p < width) value += input[p] * mask[j];
    }
    if (i < width) output[i] = value;
}
