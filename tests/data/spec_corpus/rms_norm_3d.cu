// RMS norm of each row of a [nsamples][nchannels][nrows][ncols] tensor, one warp per row; the
// host launches a 3D grid of rows, channels and samples that the kernel reads back through
// gridDim to find its row.
#define WARP 32

template <int block_size>
__global__ void rms_norm_3d(const float* x, float* dst, const int ncols, const float eps) {
    const int row = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < ncols; c += block_size) {
        const float v = x[row * ncols + c];
        ss += v * v;
    }
    for (int o = WARP / 2; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffff, ss, o);
    const float scale = rsqrtf(ss / ncols + eps);
    for (int c = threadIdx.x; c < ncols; c += block_size) dst[row * ncols + c] = scale * x[row * ncols + c];
}

static void rms_norm_3d_launch(const float* x, float* dst, const int ncols, const int nrows,
                               const int nchannels, const int nsamples, const float eps,
                               cudaStream_t stream) {
    const dim3 blocks_num(nrows, nchannels, nsamples);
    const dim3 block_dims(WARP, 1, 1);
    rms_norm_3d<WARP><<<blocks_num, block_dims, 0, stream>>>(x, dst, ncols, eps);
}
