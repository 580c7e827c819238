// Gradient of a token embedding: dwte[inp[b, t], c] += dout[b, t, c], with atomics.
__global__ void embedding_backward(float* dwte, const float* dout, const int* inp,
                                   int BT, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= BT * C) return;
    int bt = idx / C;
    int c = idx % C;
    int ix = inp[bt];
    atomicAdd(&dwte[ix * C + c], dout[bt * C + c]);
}

void embedding_bwd(float* dwte, const float* dout, const int* inp, int B, int T, int C) {
    const int block_size = 256;
    embedding_backward<<<(B * T * C + block_size - 1) / block_size, block_size>>>(
        dwte, dout, inp, B * T, C);
}
