// Integer box sum of radius 2 over a loop of offsets, an accumulator local, the guard on
// both ends in one condition and the store outside it.
#define R 2

__global__ void box_sum(const int* counts, int* sums, int n)
{
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int s = 0;
    if (g >= R && g + R < n) {
        for (int d = -R; d <= R; d++) s += counts[g + d];
    }
    if (g < n) sums[g] = s;
}
