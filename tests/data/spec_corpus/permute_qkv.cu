#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;

// Split a fused (B, N, 3, NH, d) projection into q, k, v of shape (B, NH, N, d).
__global__ void permute_kernel(floatX* q, floatX* k, floatX* v, const floatX* inp,
                               int B, int N, int NH, int d) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < B * NH * N * d) {
        int b = idx / (NH * N * d);
        int rest = idx % (NH * N * d);
        int nh = rest / (N * d);
        rest = rest % (N * d);
        int n = rest / d;
        int dd = rest % d;
        int src = b * N * 3 * NH * d + n * 3 * NH * d + nh * d + dd;
        q[idx] = inp[src];
        k[idx] = inp[src + NH * d];
        v[idx] = inp[src + 2 * NH * d];
    }
}

void permute(floatX* q, floatX* k, floatX* v, const floatX* inp, int B, int N, int NH, int d) {
    int total = B * NH * N * d;
    permute_kernel<<<(total + 255) / 256, 256>>>(q, k, v, inp, B, N, NH, d);
}
