// A causal softmax over rows of (batch, head, query) laid out b, h, t: row t keeps columns
// 0..t. The row count is a local before the guard; the row pointers add three offsets.
__global__ void causal_rows(float* probs, const float* scores, int B, int H, int T)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int rows = B * H * T;
    if (idx < rows) {
        int h = idx % H;
        int t = (idx / H) % T;
        int b = idx / (H * T);
        const float* srow = scores + b * H * T * T + h * T * T + t * T;
        float* prow = probs + b * H * T * T + h * T * T + t * T;
        float m = -1e30f;
        for (int j = 0; j <= t; j++) {
            m = fmaxf(m, srow[j]);
        }
        float total = 0.0f;
        for (int j = 0; j <= t; j++) {
            float e = expf(srow[j] - m);
            total += e;
            prow[j] = e;
        }
        for (int j = 0; j <= t; j++) {
            prow[j] = prow[j] / total;
        }
    }
}
