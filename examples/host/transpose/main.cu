// A user's program around transpose_naive: transposes a rows x cols matrix on the GPU with
// the kernel launched the way the program launches it (32x8 blocks over the matrix), and
// prints every 101st output and the sum of all outputs. Outputs the kernel does not write stay
// NaN (the buffer is filled with 0xFF bytes first).
//
// Build and run: nvcc -O2 -o transpose_host main.cu && ./transpose_host [rows cols]

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "transpose.cu"

int main(int argc, char** argv)
{
    const int rows = argc > 1 ? std::atoi(argv[1]) : 1000;
    const int cols = argc > 2 ? std::atoi(argv[2]) : 777;
    std::vector<float> in((size_t)rows * cols), out((size_t)rows * cols);
    for (size_t i = 0; i < in.size(); ++i) in[i] = (float)((i * 2654435761u) % 1000u) / 10.0f;
    float *d_in, *d_out;
    if (cudaMalloc(&d_in, in.size() * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&d_out, out.size() * sizeof(float)) != cudaSuccess) {
        std::fprintf(stderr, "cudaMalloc failed\n");
        return 1;
    }
    cudaMemcpy(d_in, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(d_out, 0xFF, out.size() * sizeof(float));
    dim3 block(32, 8);
    dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    transpose_naive<<<grid, block>>>(d_in, d_out, rows, cols);
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
        std::fprintf(stderr, "transpose_naive: %s\n", cudaGetErrorString(err));
        return 1;
    }
    cudaMemcpy(out.data(), d_out, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
    double sum = 0.0;
    for (size_t i = 0; i < out.size(); ++i) {
        sum += out[i];
        if (i % 101 == 0) std::printf("out[%zu] = %.6e\n", i, out[i]);
    }
    std::printf("sum = %.6e\n", sum);
    return 0;
}
