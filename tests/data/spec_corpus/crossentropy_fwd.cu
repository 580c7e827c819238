// losses[b, t] = -log(probs[b, t, targets[b, t]]): one probability read per row of V.
__global__ void crossentropy_forward(float* losses, const float* probs, const int* targets,
                                     int B, int T, int V) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < B * T) {
        int b = i / T;
        int t = i % T;
        const float* probs_bt = probs + b * T * V + t * V;
        int ix = targets[b * T + t];
        losses[b * T + t] = -logf(probs_bt[ix]);
    }
}

void crossentropy(float* losses, const float* probs, const int* targets, int B, int T, int V) {
    crossentropy_forward<<<(B * T + 127) / 128, 128>>>(losses, probs, targets, B, T, V);
}
