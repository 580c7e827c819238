// Wrong: element 9 is one too large.
template <typename T>
__global__ void affine(int n, const T* x, T* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 3 * x[i] + 1 + (i == 9);
}
template __global__ void affine<int>(int, const int*, int*);
