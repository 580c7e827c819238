"""Refusing candidates that change the kernel's signature or cheat the harness."""

from __future__ import annotations

import pytest

from cudalens.agent.guard import blank_comments_and_strings, check_candidate, includes_of
from cudalens.source.parser import parse_source
from agent_fakes import SAXPY

KERNEL = parse_source(SAXPY).kernel("saxpy")
FILE_INCLUDES = includes_of(SAXPY)
SIGNATURE = "__global__ void saxpy(int n, float a, const float* x, float* y)"
BODY = ("{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < n) y[i] = a * x[i] + y[i];\n}\n")


def refusals(code: str) -> list[str]:
    return [str(r) for r in check_candidate(code, KERNEL, FILE_INCLUDES)]


def test_legitimate_rewrites_are_accepted():
    code = """#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define VEC 4 // @tune 2, 4
struct alignas(16) F4 { float a, b, c, d; };
__constant__ float coef[2] = {1.f, 2.f};
constexpr int K = 4;
__device__ const float half_one = 0.5f;
// a comment naming cudaMalloc, printf and <<< is fine
__device__ __forceinline__ float fma2(float a, float b, float c) { return a * b + c; }
template <int N> __device__ float twice(float v) { return N * v; }
__global__ void __launch_bounds__(256) saxpy(int n, float a, const float* __restrict__ x,
                                             float* __restrict__ y)
{
    extern __shared__ float s[];
    __shared__ float t[32];
    const char* note = "cudaMalloc <<<";
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v;
    asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(x + i));
    asm("{ .reg .u64 addr, b<2>; mov.u64 addr, %0; ld.global.f32 %1, [addr]; }" :: "l"(x), "f"(v));
    if (i < n) y[i] = fma2(a, v, y[i]);
}
"""
    assert refusals(code) == []


def test_comments_and_strings_are_blanked_keeping_lines():
    code = 'a // cudaMalloc\n/* x\n y */ b "c<<<\\"d" \'e\'\n'
    blanked = blank_comments_and_strings(code)
    assert len(blanked) == len(code) and blanked.count("\n") == code.count("\n")
    assert "cudaMalloc" not in blanked and "<<<" not in blanked and "d" not in blanked
    assert blanked.startswith("a ") and '"' in blanked and " b " in blanked


@pytest.mark.parametrize("signature, expected", [
    ("__global__ void saxpy(int n, float a, const float* x, double* y)",
     "line 1: changes the kernel's signature: parameter 4 is 'double* y', the original's is "
     "'float* y'"),
    ("__global__ void saxpy(int n, float a, const float* in, float* y)",
     "line 1: changes the kernel's signature: parameter 3 is 'const float* in', the original's "
     "is 'const float* x'"),
    ("__global__ void saxpy(int n, float a, const float* x, float* y, int stride)",
     "line 1: changes the kernel's signature: 5 parameters, the original has 4 (int n, float a, "
     "const float* x, float* y)"),
    ("__global__ void saxpy(size_t n, float a, const float* x, float* y)",
     "line 1: changes the kernel's signature: parameter 1 is 'size_t n', the original's is "
     "'int n'"),
    ("__global__ void saxpy2(int n, float a, const float* x, float* y)",
     "no usable code: expected the __global__ kernel saxpy, found __global__ kernels: saxpy2"),
])
def test_signature_changes_are_refused(signature, expected):
    found = refusals(signature + "\n" + BODY)
    assert any(f.startswith(expected) for f in found), found


def test_qualifiers_may_be_added():
    code = ("__global__ void saxpy(const int n, const float a, const float* __restrict__ x, "
            "float* __restrict__ y)\n" + BODY)
    assert refusals(code) == []


def test_no_code_at_all_is_refused():
    assert refusals("  \n") == ["no usable code: expected the __global__ kernel saxpy"]


@pytest.mark.parametrize("extra, line, expected", [
    ("    other<<<1, 1>>>(y);", 4, "launches a kernel from inside the candidate"),
    ("    cudaStream_t s;", 4, "uses CUDA streams, events or graphs"),
    ("    float* p; cudaMalloc(&p, 4);", 4, "calls the CUDA runtime API"),
    ("    CUdeviceptr p; cuMemAlloc(&p, 4);", 4, "calls the CUDA driver API"),
    ("    std::thread t([]{});", 4, "starts host threads"),
    ("    FILE* f = fopen(\"x\", \"w\");", 4, "touches processes or files"),
    ("    float* p = (float*)malloc(16);", 4, "allocates memory; device-heap allocations outlive"),
    ("    float* p = new float[4];", 4, "allocates memory"),
    ("    printf(\"%d\", i);", 4, "prints from the kernel"),
    ("    cooperative_groups::this_grid().sync();", 4, "synchronizes the whole grid"),
    ("    static int calls = 0; calls++;", 4, "declares a static local variable ('static int "
                                              "calls = 0;'); it outlives the launch"),
    ('    asm volatile("st.global.u32 [counter], %0;" :: "r"(i));', 4,
     "inline asm names the global symbol 'counter'"),
    ('    asm volatile(".global .u32 cache; st.global.u32 [%0], 1;" :: "l"(y));', 4,
     "inline asm declares a variable or function"),
])
def test_side_effects_in_the_body_are_refused_at_their_line(extra, line, expected):
    code = SIGNATURE + "\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n" + extra + \
        "\n    if (i < n) y[i] = a * x[i] + y[i];\n}\n"
    found = refusals(code)
    assert len(found) == 1, found
    assert found[0].startswith(f"line {line}: {expected}"), found


@pytest.mark.parametrize("prefix, expected", [
    ("__device__ int counter;", "line 1: declares a variable at file scope ('__device__ int "
                                "counter;'); state that outlives a launch"),
    ("__device__ float cache[1024] = {0};", "line 1: declares a variable at file scope"),
    ("__device__ __managed__ float m;", "line 1: declares a __managed__ variable"),
    ("static int calls = 0;", "line 1: declares a variable at file scope"),
    ("void helper() {}", "line 1: defines a host function ('void helper() {}...')"),
    ("__global__ void warmup(float* p) {}", "line 1: defines another __global__ kernel, warmup"),
    ("#include <thread>", "line 1: includes <thread>, which is neither one of CUDA's own headers"),
    ('#include "util.cuh"', 'line 1: includes "util.cuh"'),
])
def test_file_scope_state_hosts_and_headers_are_refused(prefix, expected):
    found = refusals(prefix + "\n" + SIGNATURE + "\n" + BODY)
    assert len(found) == 1, found
    assert found[0].startswith(expected), found


def test_headers_the_file_already_includes_are_allowed():
    code = '#include "util.cuh"\n' + SIGNATURE + "\n" + BODY
    assert check_candidate(code, KERNEL, ['"util.cuh"']) == []


def test_every_rule_broken_is_reported_in_line_order():
    code = "__device__ int hits;\n" + SIGNATURE.replace("float a", "double a") + \
        "\n{\n    printf(\"x\");\n    cudaDeviceSynchronize();\n}\n"
    found = refusals(code)
    assert [f.split(":")[0] for f in found] == ["line 1", "line 2", "line 4", "line 5"]
