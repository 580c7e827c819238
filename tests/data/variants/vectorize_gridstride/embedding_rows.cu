// Embedding lookup, flattened: row ids[t] of the table is copied to output row t, one
// element per thread (D columns per row).
__global__ void embedding_forward(const float* __restrict__ table, const long long* __restrict__ ids,
                                  float* __restrict__ out, int tokens, int D)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= tokens * D) return;
    out[i] = table[ids[i / D] * D + i % D];
}
