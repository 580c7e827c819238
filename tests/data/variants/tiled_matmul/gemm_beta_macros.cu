// C = alpha * A B + beta * C with the sizes as macros, accumulating straight into C: the
// element is scaled by beta first, then each k adds one product (counter declared first).
#define NI 37
#define NJ 45
#define NK 29

__global__ void gemm_in_place(float alpha, float beta, const float *a, const float *b, float *c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int k;

    if ((i < NI) && (j < NJ)) {
        c[i * NJ + j] *= beta;
        for (k = 0; k < NK; k++) {
            c[i * NJ + j] += alpha * a[i * NK + k] * b[k * NJ + j];
        }
    }
}
