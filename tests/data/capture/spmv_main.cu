// A CSR sparse matrix-vector product y = A x on a matrix only this program knows: rows of
// irregular lengths (0 to 63 nonzeros, from a fixed LCG), columns spread over the whole
// vector. Random inputs could not drive spmv_csr (row_ptr must be non-decreasing and end at
// nnz); a capture records the real structure. Prints a checksum of y's bytes.
#include <cstdint>
#include <cstdio>
#include <vector>
#include "spmv.cu"

#define CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) { \
    std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e)); return 1; } } while (0)

int main() {
    const int rows = 200003;
    uint32_t s = 12345;
    auto next = [&]() { s = s * 1664525u + 1013904223u; return s >> 8; };
    std::vector<int> row_ptr(rows + 1, 0), col;
    std::vector<float> val, x(rows);
    for (int r = 0; r < rows; ++r) {
        int len = (r % 17 == 0) ? 0 : int(next() % 64);
        for (int k = 0; k < len; ++k) {
            col.push_back(int(next() % rows));
            val.push_back(float(next() % 1000) / 500.0f - 1.0f);
        }
        row_ptr[r + 1] = int(col.size());
    }
    for (int i = 0; i < rows; ++i) x[i] = float(i % 101) * 0.01f;
    const int nnz = int(col.size());
    int *d_rp, *d_col; float *d_val, *d_x, *d_y;
    CHECK(cudaMalloc(&d_rp, (rows + 1) * sizeof(int)));
    CHECK(cudaMalloc(&d_col, nnz * sizeof(int)));
    CHECK(cudaMalloc(&d_val, nnz * sizeof(float)));
    CHECK(cudaMalloc(&d_x, rows * sizeof(float)));
    CHECK(cudaMalloc(&d_y, rows * sizeof(float)));
    CHECK(cudaMemcpy(d_rp, row_ptr.data(), (rows + 1) * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_col, col.data(), nnz * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_val, val.data(), nnz * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_x, x.data(), rows * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_y, 0, rows * sizeof(float)));
    spmv_csr<<<(rows + 127) / 128, 128>>>(rows, d_rp, d_col, d_val, d_x, d_y);
    CHECK(cudaGetLastError());
    std::vector<float> y(rows);
    CHECK(cudaMemcpy(y.data(), d_y, rows * sizeof(float), cudaMemcpyDeviceToHost));
    uint64_t h = 1469598103934665603ull;
    const unsigned char* p = reinterpret_cast<const unsigned char*>(y.data());
    for (size_t i = 0; i < y.size() * sizeof(float); ++i) { h ^= p[i]; h *= 1099511628211ull; }
    std::printf("nnz %d checksum %016llx\n", nnz, (unsigned long long)h);
    return 0;
}
