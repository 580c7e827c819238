"""A spec against the kernel it describes: coverage, roles and types."""

from __future__ import annotations

import dataclasses

import pytest

from cudalens.source.parser import parse_source
from cudalens.spec.errors import SpecError
from cudalens.spec.parser import parse_spec, validate

KERNEL = """\
__global__ void k(int n, float a, const float* x, float* y, double* d, float4* v, T* t)
{
}
"""


@pytest.fixture(scope="module")
def kernel():
    return parse_source(KERNEL, "k.cu").kernels[0]


GOOD = """\
kernel k
size n = 64
scalar n: int = n
scalar a: float = 2.5
in x: float[n]
in y: float[n]
out d: double[n]
inout v: float[4 * n]
in t: int8[n]
block = 64
grid = 1
"""


def _spec(text):
    return parse_spec(text, "k.cu.spec")["k"]


def test_valid_spec_passes(kernel):
    validate(_spec(GOOD), kernel)  # in on the non-const y, float lanes for float4, any type for T


def _error(kernel, text):
    with pytest.raises(SpecError) as info:
        validate(_spec(text), kernel)
    return info.value.line, info.value.message


def test_unknown_parameter(kernel):
    text = GOOD.replace("in t: int8[n]\n", "in t: int8[n]\nin z: float[n]\n")
    assert _error(kernel, text) == (
        10, "kernel k has no parameter named z (its parameters: n, a, x, y, d, v, t)")


def test_missing_pointer(kernel):
    assert _error(kernel, GOOD.replace("in y: float[n]\n", "")) == (
        1, "kernel k: parameter y ('float* y') is not in the spec: expected 'ROLE y: TYPE[LENGTH]'")


def test_missing_scalar(kernel):
    assert _error(kernel, GOOD.replace("scalar a: float = 2.5\n", "")) == (
        1, "kernel k: parameter a ('float a') is not in the spec: expected 'scalar a: TYPE = EXPR'")


def test_role_on_a_by_value_parameter(kernel):
    assert _error(kernel, GOOD.replace("scalar a: float = 2.5", "in a: float[n]")) == (
        4, "parameter a of kernel k is passed by value ('float a'): expected "
           "'scalar a: TYPE = EXPR', found role 'in'")


def test_scalar_on_a_pointer(kernel):
    assert _error(kernel, GOOD.replace("in x: float[n]", "scalar x: float = 1")) == (
        5, "parameter x of kernel k is a pointer ('const float* x'): expected 'in', 'out' or "
           "'inout' x: TYPE[LENGTH], found 'scalar'")


@pytest.mark.parametrize("role", ["out", "inout"])
def test_writing_role_on_a_const_pointer(kernel, role):
    assert _error(kernel, GOOD.replace("in x: float[n]", f"{role} x: float[n]")) == (
        5, f"parameter x of kernel k points to const ('const float* x'), so the kernel cannot "
           f"write it: expected role 'in', found '{role}'")


def test_element_type_mismatch(kernel):
    assert _error(kernel, GOOD.replace("out d: double[n]", "out d: float[n]")) == (
        7, "parameter d of kernel k: the kernel declares 'double* d' (float64), the spec says "
           "float (float32): expected an element type with dtype float64")


def test_scalar_type_mismatch(kernel):
    assert _error(kernel, GOOD.replace("scalar n: int = n", "scalar n: int64 = n")) == (
        3, "parameter n of kernel k: the kernel declares 'int n' (int32), the spec says int64 "
           "(int64): expected an element type with dtype int32")


def test_vector_lane_type_mismatch(kernel):
    assert _error(kernel, GOOD.replace("inout v: float[4 * n]", "inout v: int[4 * n]")) == (
        8, "parameter v of kernel k: the kernel declares 'float4* v' (4 x float32 per element), "
           "the spec says int (int32): expected float with the length counted in float lanes")


def test_duplicate_parameter_in_a_hand_built_spec(kernel):
    spec = _spec(GOOD)
    extra = dataclasses.replace(spec.params[2], line=42)
    spec = dataclasses.replace(spec, params=spec.params + (extra,))
    with pytest.raises(SpecError) as info:
        validate(spec, kernel)
    assert (info.value.line, info.value.message) == (
        42, "parameter x is declared twice (lines 5 and 42)")


def test_section_for_another_kernel(kernel):
    spec = dataclasses.replace(_spec(GOOD), kernel="other")
    with pytest.raises(SpecError) as info:
        validate(spec, kernel)
    assert (info.value.line, info.value.message) == (1, "expected a section for kernel k, found "
                                                         "'kernel other'")


def test_vector_by_value_cannot_be_a_scalar():
    kernel = parse_source("__global__ void k(float4 v) {}\n", "k.cu").kernels[0]
    spec = parse_spec("kernel k\nscalar v: float = 1\nblock = 1\ngrid = 1\n", "k.cu.spec")["k"]
    with pytest.raises(SpecError) as info:
        validate(spec, kernel)
    assert (info.value.line, info.value.message) == (
        2, "parameter v of kernel k: 'float4 v' is a vector passed by value, which a spec "
           "scalar cannot hold")


MACRO_KERNEL = """\
#define NI 37
#define NJ 45
#define SCRATCH 8
__global__ void g(const float* a, float* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < NI * NJ) c[i] = 2.0f * a[i];
}
"""


def _macro_spec(sizes: str, length: str) -> str:
    return (f"kernel g\n{sizes}in a: float[{length}]\nout c: float[{length}]\n"
            f"block = 256\ngrid = ceil_div({length}, block.x)\n")


def test_a_size_named_like_a_define_the_kernel_reads_is_refused_at_its_line():
    kernel = parse_source(MACRO_KERNEL, "g.cu").kernels[0]
    consts = {"NI": 37, "NJ": 45, "SCRATCH": 8}
    spec = parse_spec(_macro_spec("size NI = 37\nsize NJ = 45\n", "NI * NJ"), "g.cu.spec",
                      consts)["g"]
    with pytest.raises(SpecError) as err:
        validate(spec, kernel, MACRO_KERNEL)
    assert str(err.value).startswith(
        "g.cu.spec:2: size NI is the file's #define NI = 37, which kernel g reads: the kernel "
        "is compiled with 37 whatever the spec's sizes are")
    # the macros as constants, or a size named like a macro the kernel does not read
    for sizes, length in (("", "NI * NJ"), ("size SCRATCH = 1665\n", "SCRATCH")):
        spec = parse_spec(_macro_spec(sizes, length), "g.cu.spec", consts)["g"]
        validate(spec, kernel, MACRO_KERNEL)


HOST_SET = """\
#define TAPS 5
__constant__ float taps[TAPS];
__constant__ float gain[1] = {2.0f};
static __device__ unsigned lut[256];
extern __constant__ float elsewhere[4];
__device__ float tap(int k) { return taps[k]; }
__device__ float weight(int k) { return tap(k) * 0.5f; }
__device__ int counter_fn(int x);

__global__ void through_helper(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = weight(i % TAPS) * x[i];
}

__global__ void initialized(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = gain[0] * x[i] + elsewhere[0];
}

__global__ void table(const unsigned char* x, unsigned* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = lut[x[i]];
}
"""


def test_a_kernel_reading_constant_memory_the_host_sets_is_refused():
    from cudalens.spec.validate import host_set_globals

    assert host_set_globals(HOST_SET) == [("__constant__", "taps", 2), ("__device__", "lut", 4)]
    kernels = {k.name: k for k in parse_source(HOST_SET, "c.cu").kernels}

    def spec(name, types=("float", "float")):
        return parse_spec(f"kernel {name}\nsize n = 1024\nin x: {types[0]}[n]\n"
                          f"out y: {types[1]}[n]\nscalar n: int = n\nblock = 256\n"
                          f"grid = ceil_div(n, block.x)\n", "c.cu.spec")[name]

    with pytest.raises(SpecError) as err:  # through weight() and tap()
        validate(spec("through_helper"), kernels["through_helper"], HOST_SET)
    assert str(err.value).startswith(
        "c.cu.spec:1: kernel through_helper reads __constant__ taps (declared at line 2 of the "
        "kernel's file without an initializer): the program's host code fills it")
    with pytest.raises(SpecError, match="reads __device__ lut \\(declared at line 4"):
        validate(spec("table", ("uint8", "uint32")), kernels["table"], HOST_SET)
    # an initializer, or extern (defined elsewhere: not this file's to judge), is fine
    validate(spec("initialized"), kernels["initialized"], HOST_SET)
