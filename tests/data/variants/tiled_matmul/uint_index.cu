// C = A B with the indices in the short unsigned name <sys/types.h> gives, 'uint'.
__global__ void mm_uint(const float* A, const float* B, float* C, int m, int n, int k)
{
    const uint col = blockIdx.x * blockDim.x + threadIdx.x;
    const uint row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        float acc = 0.0f;
        for (uint p = 0; p < k; p++)
            acc += A[row * k + p] * B[p * n + col];
        C[row * n + col] = acc;
    }
}
