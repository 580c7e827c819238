// A user's program around layernorm_rows: fills a rows x cols matrix, normalizes its rows on
// the GPU with the kernel launched the way the program launches it, and prints every 97th
// output and the sum of all outputs. Outputs the kernel does not write stay NaN (the buffer
// is filled with 0xFF bytes first), so a launch that misses rows shows in the output.
//
// Build and run: nvcc -O2 -o layernorm_host main.cu && ./layernorm_host [rows cols]

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "layernorm.cu"

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

// Normalizes the n_rows rows of d_x into d_y on the default stream.
static void normalize(const float* d_x, const float* d_gamma, const float* d_beta, float* d_y,
                      int n_rows, int n_cols)
{
    const int threads = 256;
    layernorm_rows<<<(n_rows + threads - 1) / threads, threads>>>(d_x, d_gamma, d_beta, d_y,
                                                                  n_rows, n_cols, 1e-5f);
}

int main(int argc, char** argv)
{
    const int rows = argc > 1 ? std::atoi(argv[1]) : 1000;
    const int cols = argc > 2 ? std::atoi(argv[2]) : 300;
    std::vector<float> x((size_t)rows * cols), gamma(cols), beta(cols), y((size_t)rows * cols);
    unsigned state = 12345u;
    for (auto& v : x) {
        state = state * 1664525u + 1013904223u;
        v = (float)(state >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
    }
    for (int c = 0; c < cols; ++c) {
        gamma[c] = 1.0f + 0.001f * c;
        beta[c] = 0.01f * (c % 7);
    }
    float *d_x, *d_gamma, *d_beta, *d_y;
    CHECK(cudaMalloc(&d_x, x.size() * sizeof(float)));
    CHECK(cudaMalloc(&d_gamma, cols * sizeof(float)));
    CHECK(cudaMalloc(&d_beta, cols * sizeof(float)));
    CHECK(cudaMalloc(&d_y, y.size() * sizeof(float)));
    CHECK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_gamma, gamma.data(), cols * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_beta, beta.data(), cols * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_y, 0xFF, y.size() * sizeof(float)));
    normalize(d_x, d_gamma, d_beta, d_y, rows, cols);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(y.data(), d_y, y.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double sum = 0.0;
    for (size_t i = 0; i < y.size(); ++i) {
        sum += y[i];
        if (i % 97 == 0) std::printf("y[%zu] = %.6e\n", i, y[i]);
    }
    std::printf("sum = %.6e\n", sum);
    return 0;
}
