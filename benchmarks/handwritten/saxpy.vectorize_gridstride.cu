// Hand-written: saxpy with float4 accesses in a grid-stride loop, scalar tail.
__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    if (reinterpret_cast<size_t>(x) % 16 == 0 && reinterpret_cast<size_t>(y) % 16 == 0) {
        for (int v = i; v < n / 4; v += stride) {
            float4 xv = reinterpret_cast<const float4*>(x)[v];
            float4 yv = reinterpret_cast<float4*>(y)[v];
            yv.x = a * xv.x + yv.x;
            yv.y = a * xv.y + yv.y;
            yv.z = a * xv.z + yv.z;
            yv.w = a * xv.w + yv.w;
            reinterpret_cast<float4*>(y)[v] = yv;
        }
        i += n / 4 * 4;
    }
    for (; i < n; i += stride)
        y[i] = a * x[i] + y[i];
}
