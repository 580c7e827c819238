// Hand-written: the scaled gather, four elements per thread and trip. The indices come in
// with one int4 load and the results leave with one float4 store; the four src reads stay
// scalar (they go wherever idx points) but are independent, so all four are in flight at
// once. Misaligned idx/out and the last n % 4 elements take the scalar loop.
__global__ void gather_scale(const float* src, const int* idx, float* out, float scale, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    if (reinterpret_cast<size_t>(idx) % 16 == 0 && reinterpret_cast<size_t>(out) % 16 == 0) {
        for (int v = i; v < n / 4; v += stride) {
            int4 j = reinterpret_cast<const int4*>(idx)[v];
            float4 r;
            r.x = scale * src[j.x];
            r.y = scale * src[j.y];
            r.z = scale * src[j.z];
            r.w = scale * src[j.w];
            reinterpret_cast<float4*>(out)[v] = r;
        }
        i += n / 4 * 4;
    }
    for (; i < n; i += stride)
        out[i] = scale * src[idx[i]];
}
