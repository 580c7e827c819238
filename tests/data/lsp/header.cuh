// helper for uses_header.cu
__device__ float twice(float x) { return 2.0f * x; }
