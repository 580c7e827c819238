// Doubles, the sizes first, the column added before the row offset, r++ and a BLOCK #define.
#define BLOCK 64

__global__ void dcolsum(int rows, int cols, const double* in, double* out)
{
    int c = BLOCK * blockIdx.x + threadIdx.x;
    if (c < cols) {
        double s = 0.0;
        for (int r = 0; r < rows; r++) s += in[c + r * cols];
        out[c] = s;
    }
}
