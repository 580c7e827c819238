"""A generated CUDA file for the language server's latency benchmark: many kernels of the
kinds the examples hold, with the code around kernels that real files have.

``generate(lines, seed)`` returns at least ``lines`` lines of self-contained CUDA (no
``#include``; nvcc's implicit runtime header is enough) made of repeating *units*. Each unit
draws one kernel shape with fresh names: elementwise with a grid-stride loop, 2D tiled
transpose (a ``template<int TILE>``), shared-memory block reduction with warp shuffles,
1D stencil with ``__launch_bounds__``, tiled matmul, histogram with atomics, a row softmax,
kernels inside a ``namespace`` calling ``__device__`` helpers, and ``extern "C"`` ones. Around
the kernels: ``#define`` macros, ``__constant__`` arrays, structs, ``__device__`` helpers and
a host launcher per kernel with a ``<<<...>>>`` launch (spec inference reads those).

Each kernel is recorded with the zero-based line its definition starts on (the template
header or ``extern "C"`` line where there is one), its name's line and column, and its plain
and qualified names, so a test can check the server's lens positions against them. The text
compiles with ``nvcc -c`` (the benchmark's diagnostics part relies on that).
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class GeneratedKernel:
    name: str
    qualified_name: str
    start_line: int  # zero-based: first line of the definition (template/extern included)
    name_line: int  # zero-based line of the kernel's name
    name_column: int  # zero-based column of the name (ASCII text: bytes = UTF-16 units)
    body_line: int  # a zero-based line inside the kernel's body


@dataclass(frozen=True)
class GeneratedSource:
    text: str
    kernels: tuple[GeneratedKernel, ...]

    @property
    def line_count(self) -> int:
        return self.text.count("\n")


def _elementwise(i: int) -> tuple[str, str, list[str]]:
    name = f"saxpy_{i}"
    return name, "", [
        f"// y = a * x + y over n elements, grid-stride loop (variant {i}).",
        f"__global__ void {name}(int n, float a, const float* x, float* y)",
        "{",
        "    int stride = blockDim.x * gridDim.x;",
        "    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {",
        "        float xv = x[k];",
        "        y[k] = a * xv + y[k];",
        "    }",
        "}",
        "",
        f"void launch_{name}(int n, float a, const float* x, float* y)",
        "{",
        f"    {name}<<<(n + 255) / 256, 256>>>(n, a, x, y);",
        "}",
    ]


def _transpose(i: int) -> tuple[str, str, list[str]]:
    name = f"transpose_tiled_{i}"
    return name, "template", [
        f"// out = in^T through a shared tile with one column of padding (variant {i}).",
        "template <int TILE>",
        f"__global__ void {name}(const float* __restrict__ in, float* __restrict__ out,",
        "                       int rows, int cols)",
        "{",
        "    __shared__ float tile[TILE][TILE + 1];",
        "    int x = blockIdx.x * TILE + threadIdx.x;",
        "    int y = blockIdx.y * TILE + threadIdx.y;",
        "    for (int j = 0; j < TILE; j += blockDim.y) {",
        "        if (x < cols && y + j < rows) {",
        "            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];",
        "        }",
        "    }",
        "    __syncthreads();",
        "    x = blockIdx.y * TILE + threadIdx.x;",
        "    y = blockIdx.x * TILE + threadIdx.y;",
        "    for (int j = 0; j < TILE; j += blockDim.y) {",
        "        if (x < rows && y + j < cols) {",
        "            out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];",
        "        }",
        "    }",
        "}",
        "",
        f"void launch_{name}(const float* in, float* out, int rows, int cols)",
        "{",
        "    dim3 block(32, 8);",
        "    dim3 grid((cols + 31) / 32, (rows + 31) / 32);",
        f"    {name}<32><<<grid, block>>>(in, out, rows, cols);",
        "}",
    ]


def _reduce(i: int) -> tuple[str, str, list[str]]:
    name = f"block_sum_{i}"
    return name, "", [
        f"__device__ __forceinline__ float warp_sum_{i}(float v)",
        "{",
        "    for (int offset = 16; offset > 0; offset >>= 1) {",
        "        v += __shfl_down_sync(0xffffffffu, v, offset);",
        "    }",
        "    return v;",
        "}",
        "",
        f"// One partial sum per block of {256} threads (variant {i}).",
        f"__global__ void {name}(const float* in, float* partial, int n)",
        "{",
        "    __shared__ float warps[32];",
        "    int k = blockIdx.x * blockDim.x + threadIdx.x;",
        "    float v = k < n ? in[k] : 0.0f;",
        f"    v = warp_sum_{i}(v);",
        "    if ((threadIdx.x & 31) == 0) {",
        "        warps[threadIdx.x >> 5] = v;",
        "    }",
        "    __syncthreads();",
        "    if (threadIdx.x < 32) {",
        "        v = threadIdx.x < blockDim.x / 32 ? warps[threadIdx.x] : 0.0f;",
        f"        v = warp_sum_{i}(v);",
        "        if (threadIdx.x == 0) {",
        "            partial[blockIdx.x] = v;",
        "        }",
        "    }",
        "}",
        "",
        f"void launch_{name}(const float* in, float* partial, int n)",
        "{",
        f"    {name}<<<(n + 255) / 256, 256>>>(in, partial, n);",
        "}",
    ]


def _stencil(i: int) -> tuple[str, str, list[str]]:
    name = f"stencil_{i}"
    return name, "", [
        f"#define RADIUS_{i} {1 + i % 4}",
        f"__constant__ float weights_{i}[2 * RADIUS_{i} + 1] = {{0.25f, 0.5f, 0.25f}};",
        "",
        f"__global__ void __launch_bounds__(256) {name}(const float* in, float* out, int n)",
        "{",
        f"    __shared__ float halo[256 + 2 * RADIUS_{i}];",
        "    int g = blockIdx.x * blockDim.x + threadIdx.x;",
        f"    int l = threadIdx.x + RADIUS_{i};",
        "    halo[l] = g < n ? in[g] : 0.0f;",
        f"    if (threadIdx.x < RADIUS_{i}) {{",
        f"        int left = g - RADIUS_{i};",
        "        int right = g + blockDim.x;",
        f"        halo[l - RADIUS_{i}] = left >= 0 ? in[left] : 0.0f;",
        "        halo[l + blockDim.x] = right < n ? in[right] : 0.0f;",
        "    }",
        "    __syncthreads();",
        "    if (g < n) {",
        "        float acc = 0.0f;",
        f"        for (int r = -RADIUS_{i}; r <= RADIUS_{i}; ++r) {{",
        f"            acc += weights_{i}[r + RADIUS_{i}] * halo[l + r];",
        "        }",
        "        out[g] = acc;",
        "    }",
        "}",
        "",
        f"void launch_{name}(const float* in, float* out, int n)",
        "{",
        f"    {name}<<<(n + 255) / 256, 256>>>(in, out, n);",
        "}",
    ]


def _matmul(i: int) -> tuple[str, str, list[str]]:
    name = f"matmul_{i}"
    return name, "", [
        f"struct Shape{i} {{",
        "    int m, n, k;",
        "};",
        "",
        f"// C = A * B, 16x16 tiles in shared memory (variant {i}).",
        f"__global__ void {name}(const float* a, const float* b, float* c, int m, int n, int k)",
        "{",
        "    __shared__ float as[16][16];",
        "    __shared__ float bs[16][16];",
        "    int row = blockIdx.y * 16 + threadIdx.y;",
        "    int col = blockIdx.x * 16 + threadIdx.x;",
        "    float acc = 0.0f;",
        "    for (int t = 0; t < (k + 15) / 16; ++t) {",
        "        int ac = t * 16 + threadIdx.x;",
        "        int br = t * 16 + threadIdx.y;",
        "        as[threadIdx.y][threadIdx.x] = row < m && ac < k ? a[row * k + ac] : 0.0f;",
        "        bs[threadIdx.y][threadIdx.x] = br < k && col < n ? b[br * n + col] : 0.0f;",
        "        __syncthreads();",
        "#pragma unroll",
        "        for (int e = 0; e < 16; ++e) {",
        "            acc += as[threadIdx.y][e] * bs[e][threadIdx.x];",
        "        }",
        "        __syncthreads();",
        "    }",
        "    if (row < m && col < n) {",
        "        c[row * n + col] = acc;",
        "    }",
        "}",
        "",
        f"void launch_{name}(const float* a, const float* b, float* c, Shape{i} s)",
        "{",
        "    dim3 block(16, 16);",
        "    dim3 grid((s.n + 15) / 16, (s.m + 15) / 16);",
        f"    {name}<<<grid, block>>>(a, b, c, s.m, s.n, s.k);",
        "}",
    ]


def _histogram(i: int) -> tuple[str, str, list[str]]:
    name = f"histogram_{i}"
    return name, "extern", [
        f"extern \"C\" __global__ void {name}(const unsigned char* data, unsigned int* bins,",
        "                                      int n)",
        "{",
        "    __shared__ unsigned int local[256];",
        "    for (int b = threadIdx.x; b < 256; b += blockDim.x) {",
        "        local[b] = 0u;",
        "    }",
        "    __syncthreads();",
        "    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n;",
        "         k += blockDim.x * gridDim.x) {",
        "        atomicAdd(&local[data[k]], 1u);",
        "    }",
        "    __syncthreads();",
        "    for (int b = threadIdx.x; b < 256; b += blockDim.x) {",
        "        atomicAdd(&bins[b], local[b]);",
        "    }",
        "}",
        "",
        f"void launch_{name}(const unsigned char* data, unsigned int* bins, int n)",
        "{",
        f"    {name}<<<264, 256>>>(data, bins, n);",
        "}",
    ]


def _softmax(i: int) -> tuple[str, str, list[str]]:
    name = f"softmax_rows_{i}"
    ns = f"ops{i % 7}"
    return name, ns, [
        f"namespace {ns} {{",
        "",
        f"__device__ float row_max_{i}(const float* row, int cols)",
        "{",
        "    float m = -3.402823466e38f;",
        "    for (int c = 0; c < cols; ++c) {",
        "        m = fmaxf(m, row[c]);",
        "    }",
        "    return m;",
        "}",
        "",
        f"__global__ void {name}(const float* in, float* out, int rows, int cols)",
        "{",
        "    int r = blockIdx.x * blockDim.x + threadIdx.x;",
        "    if (r >= rows) {",
        "        return;",
        "    }",
        "    const float* row = in + (long long)r * cols;",
        f"    float m = row_max_{i}(row, cols);",
        "    float sum = 0.0f;",
        "    for (int c = 0; c < cols; ++c) {",
        "        sum += expf(row[c] - m);",
        "    }",
        "    for (int c = 0; c < cols; ++c) {",
        "        out[(long long)r * cols + c] = expf(row[c] - m) / sum;",
        "    }",
        "}",
        "",
        f"}}  // namespace {ns}",
        "",
        f"void launch_{name}(const float* in, float* out, int rows, int cols)",
        "{",
        f"    {ns}::{name}<<<(rows + 127) / 128, 128>>>(in, out, rows, cols);",
        "}",
    ]


SHAPES = (_elementwise, _transpose, _reduce, _stencil, _matmul, _histogram, _softmax)


def generate(lines: int = 10_000, seed: int = 0) -> GeneratedSource:
    """At least ``lines`` lines of CUDA (a little more: the last unit is completed).

    The shapes follow a seeded shuffle of ``SHAPES`` repeated, so every shape appears and the
    same ``seed`` gives the same text.
    """
    rng = random.Random(seed)
    out: list[str] = ["// Generated by benchmarks/lsp_source_gen.py: a large CUDA file for the",
                      "// language server latency benchmark. Self-contained: no #include.", ""]
    kernels: list[GeneratedKernel] = []
    i = 0
    while len(out) < lines:
        order = list(SHAPES)
        rng.shuffle(order)
        for shape in order:
            if len(out) >= lines:
                break
            name, kind, body = shape(i)
            base = len(out)
            sig = next(n for n, text in enumerate(body) if f" {name}(" in text
                       and ("__global__" in text))
            start = sig - 1 if kind == "template" else sig
            qualified = f"{kind}::{name}" if kind not in ("", "template", "extern") else name
            name_line = base + sig
            kernels.append(GeneratedKernel(
                name=name, qualified_name=qualified, start_line=base + start,
                name_line=name_line, name_column=body[sig].index(f" {name}(") + 1,
                body_line=base + sig + 3))
            out.extend(body)
            out.append("")
            i += 1
    return GeneratedSource(text="\n".join(out) + "\n", kernels=tuple(kernels))
