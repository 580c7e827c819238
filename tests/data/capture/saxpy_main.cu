// A user's program with the CUDA runtime linked statically (nvcc -cudart static): its launches
// reach the driver through cuLaunchKernel inside the program, not through libcudart.so.
// Runs saxpy three times on n = 3,000,017 elements and prints a checksum of y (its bytes), so
// a run under `cudalens capture` can be compared with a plain run.
#include <cstdint>
#include <cstdio>
#include <vector>
#include "saxpy_kernel.cu"

#define CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) { \
    std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e)); return 1; } } while (0)

int main() {
    const int n = 3000017;
    std::vector<float> hx(n), hy(n);
    for (int i = 0; i < n; ++i) { hx[i] = (i % 1000) * 0.001f; hy[i] = (i % 7) - 3.0f; }
    float *x = nullptr, *y = nullptr;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(y, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    for (int round = 0; round < 3; ++round) {
        saxpy<<<(n + 255) / 256, 256>>>(n, 0.5f + round, x, y);
        CHECK(cudaGetLastError());
    }
    CHECK(cudaMemcpy(hy.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    uint64_t h = 1469598103934665603ull;  // FNV-1a over y's bytes
    const unsigned char* p = reinterpret_cast<const unsigned char*>(hy.data());
    for (size_t i = 0; i < hy.size() * sizeof(float); ++i) { h ^= p[i]; h *= 1099511628211ull; }
    std::printf("checksum %016llx\n", (unsigned long long)h);
    return 0;
}
