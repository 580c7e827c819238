// Two kernels whose ptxas reports are not clean: one spills registers, one uses a stack frame.

// 64 values live at once, but __launch_bounds__(1024, 2) leaves 32 registers per thread.
__global__ void __launch_bounds__(1024, 2) spills(const float* in, float* out, int n)
{
    float v[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
    for (int k = 0; k < 64; ++k) v[k] = in[(i + k * 977) % n];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 64; ++k) s += v[k] * v[63 - k] + v[(k * 7) % 64];
    out[i % n] = s;
}

// A local array indexed by a value known only at run time lives in local memory (stack).
__global__ void stack_frame(const float* in, const int* pick, float* out, int n)
{
    float buf[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < 256; ++k) buf[k] = in[(i + k) % n];
    if (i < n) out[i] = buf[pick[i] & 255];
}
