#define RADIUS 3

// out[i] = sum of in[i .. i + 2 * RADIUS] (the input carries a halo of RADIUS on each side).
__global__ void stencil_1d(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0.0f;
        for (int k = -RADIUS; k <= RADIUS; k++) s += in[i + RADIUS + k];
        out[i] = s;
    }
}
