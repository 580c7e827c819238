// Token plus position embedding, one 16-byte vector of a row per thread, through small load
// and store helpers that take the element pointer.
template <class E>
struct alignas(16) Vec {
    static constexpr int size = sizeof(float4) / sizeof(E);
    E v[size];
};
typedef Vec<float> vec_t;

template <class E>
__device__ Vec<E> load_vec(const E* at) {
    Vec<E> r;
    *reinterpret_cast<float4*>(r.v) = *reinterpret_cast<const float4*>(at);
    return r;
}

template <class E>
__device__ void put_vec(E* at, Vec<E> value) {
    *reinterpret_cast<float4*>(at) = *reinterpret_cast<float4*>(value.v);
}

__global__ void embed_vec(float* out, const int* tokens, const float* table, const float* pos,
                          int B, int T, int C) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * vec_t::size;
    if (i >= B * T * C) return;
    int row = i / C;
    int t = row % T;
    int c = i % C;
    int token = tokens[row];
    vec_t a = load_vec(table + token * C + c);
    vec_t p = load_vec(pos + t * C + c);
    vec_t o;
    for (int k = 0; k < vec_t::size; k++) o.v[k] = a.v[k] + p.v[k];
    put_vec(out + row * C + c, o);
}

void embed(float* out, const int* tokens, const float* table, const float* pos, int B, int T,
           int C) {
    const int block = 128;
    embed_vec<<<(B * T * C / 4 + block - 1) / block, block>>>(out, tokens, table, pos, B, T, C);
}
