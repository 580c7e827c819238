// Cheat: writes nothing and relies on the output buffer still holding the previous (correct)
// result, as a harness that reuses one output buffer without clearing it would let it.
__global__ void saxpy(int n, float a, const float* x, const float* y, float* z)
{
}
