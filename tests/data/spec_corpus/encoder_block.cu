// Token embedding: one block a token, one thread a channel (the block is C wide).
__global__ void encoder(float* out, const int* ids, const float* wte, int B, int T, int C) {
    int bt = blockIdx.x;
    int c = threadIdx.x;
    int id = ids[bt];
    out[bt * C + c] = wte[id * C + c];
}

void encoder_forward(float* out, const int* ids, const float* wte, int B, int T, int C) {
    encoder<<<B * T, C>>>(out, ids, wte, B, T, C);
}
