// Token plus position embedding over a flat index; the vocabulary size is only known from
// how the host allocates the token table (V rows of C floats), never passed to the kernel.
__global__ void embed_vocab_host(float* out, const int* tokens, const float* wte,
                                 const float* wpe, int B, int T, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < B * T * C) {
        int bt = idx / C;
        int t = bt % T;
        int c = idx % C;
        int tok = tokens[bt];
        out[idx] = wte[tok * C + c] + wpe[t * C + c];
    }
}

void embed_vocab_host_forward(float* out, const int* tokens, const float* wte, const float* wpe,
                              int B, int T, int C) {
    const int threads = 256;
    const int blocks = (B * T * C + threads - 1) / threads;
    embed_vocab_host<<<blocks, threads>>>(out, tokens, wte, wpe, B, T, C);
}

int main() {
    const int B = 8;
    const int T = 1024;
    const int C = 768;
    const int V = 50257;
    float *out, *wte, *wpe;
    int* tokens;
    cudaMalloc((void**)&wte, (size_t)V * C * sizeof(float));
    cudaMalloc((void**)&wpe, (size_t)T * C * sizeof(float));
    cudaMalloc((void**)&out, (size_t)B * T * C * sizeof(float));
    cudaMalloc((void**)&tokens, (size_t)B * T * sizeof(int));
    embed_vocab_host_forward(out, tokens, wte, wpe, B, T, C);
    return 0;
}
