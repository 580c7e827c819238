"""From spec to the runner's contract: sizes, launches, cases, problems and variants."""

from __future__ import annotations

import dataclasses

import pytest

from cudalens.source.parser import parse_source
from cudalens.spec.errors import SpecError
from cudalens.spec.model import LaunchDecl
from cudalens.spec.parser import parse_spec
from cudalens.spec.resolve import (build_problem, build_variant, ragged_value, resolve_case,
                                   resolve_launch, sizes_for)
from gpu_runner.problem import Buffer, Launch, Scalar, Tolerance

SAXPY_CU = """\
__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
# parameters in a different order from the kernel's, to check args follow the kernel
SAXPY_SPEC = """\
kernel saxpy
size n = 1 << 24
in x: float[n]
inout y: float[n]
scalar a: float = 2.5
scalar n: int = n
block = 256
grid = ceil_div(n, block.x)
flops = 2 * n
"""
N = 1 << 24


@pytest.fixture(scope="module")
def saxpy():
    kernel = parse_source(SAXPY_CU, "saxpy.cu").kernels[0]
    return parse_spec(SAXPY_SPEC, "saxpy.cu.spec")["saxpy"], kernel


@pytest.mark.parametrize("v, ragged", [
    (1, 1), (2, 2), (3, 1), (4, 3), (10, 7), (1000, 601), (1024, 615),
    (1 << 24, 10066329),  # 16777216 * 3 // 5 = 10066329, already odd
    (4096, 2457),
])
def test_ragged_rule(v, ragged):
    assert ragged_value(v) == ragged
    assert ragged % 2 == 1 or v <= 2


def test_sizes_for_nominal_and_ragged():
    spec = parse_spec("kernel k\nsize n = 1024\nsize m = n / 2\nsize r = 4096\ncheck r = 1000\n"
                      "size q = 2\nblock = 1\ngrid = 1\n")["k"]
    assert sizes_for(spec, "nominal") == {"n": 1024, "m": 512, "r": 4096, "q": 2}
    # n: literal -> 615; m re-evaluated from ragged n -> 307; r from its check; q <= 2 kept
    assert sizes_for(spec, "ragged") == {"n": 615, "m": 307, "r": 1000, "q": 2}
    with pytest.raises(ValueError, match="expected a size set label in"):
        sizes_for(spec, "big")


def test_resolve_case_saxpy(saxpy):
    spec, kernel = saxpy
    case = resolve_case(spec, kernel, sizes_for(spec, "nominal"), "nominal")
    assert case.label == "nominal"
    assert case.args == (
        Scalar("n", "int32", N),
        Scalar("a", "float32", 2.5),
        Buffer("x", "float32", N, "in", -1.0, 1.0),
        Buffer("y", "float32", N, "inout", -1.0, 1.0),
    )
    # x read once (4 bytes each), y read and written (2 x 4 bytes each)
    assert case.bytes_moved == 4 * N + 2 * 4 * N == 3 * 4 * 2**24
    assert case.flops == 2 * N


def test_resolve_launch_and_block_change(saxpy):
    spec, _ = saxpy
    nominal = sizes_for(spec, "nominal")
    assert resolve_launch(spec.launch, nominal, 132) == Launch((65536, 1, 1), (256, 1, 1), 0)
    wider = dataclasses.replace(spec.launch, block=("512",))
    assert resolve_launch(wider, nominal, 132) == Launch((32768, 1, 1), (512, 1, 1), 0)
    two_d = LaunchDecl(("32", "8"), ("ceil_div(n, block.x * block.y)", "2"), "block.x * 16")
    assert resolve_launch(two_d, nominal, 132) == Launch((65536, 2, 1), (32, 8, 1), 512)
    persistent = LaunchDecl(("256",), ("4 * sm_count",))
    assert resolve_launch(persistent, nominal, 132).grid == (528, 1, 1)


def test_resolve_launch_errors_name_the_launch_line(saxpy):
    spec, _ = saxpy
    nominal = sizes_for(spec, "nominal")
    big = LaunchDecl(("2048",), ("1",), line=7)
    with pytest.raises(SpecError) as info:
        resolve_launch(big, nominal, 132, path="saxpy.cu.spec")
    assert str(info.value) == ("saxpy.cu.spec:7: expected block.x <= 1024 (the CUDA limit), found "
                               "2048 in the nominal run (n=16777216)")
    no_device = LaunchDecl(("256",), ("sm_count",), line=8)
    with pytest.raises(SpecError) as info:
        resolve_launch(no_device, nominal, None)
    assert (info.value.line, info.value.message) == (
        8, "grid.x: undefined name 'sm_count' in 'sm_count' in the nominal run (n=16777216)")


def test_build_problem(saxpy):
    spec, kernel = saxpy
    problem = build_problem(spec, kernel, seeds=(7, 8))
    assert [c.label for c in problem.cases] == ["nominal", "ragged"]
    assert problem.timed_case.args[2].length == N
    ragged = problem.cases[1]
    assert ragged.args[0] == Scalar("n", "int32", 10066329)
    assert ragged.args[3].length == 10066329
    assert ragged.bytes_moved == 12 * 10066329
    assert problem.seeds == (7, 8) and problem.tolerance is None and problem.atomics is False
    assert problem.kernel == "saxpy"


def test_build_problem_tolerance_and_atomics(saxpy):
    spec, kernel = saxpy
    spec = dataclasses.replace(spec, tolerance=1e-3, atomics=True)
    problem = build_problem(spec, kernel)
    assert problem.tolerance == Tolerance(rtol=1e-3, atol=1e-3, scaled=True)
    assert problem.atomics is True and problem.seeds == (1, 2, 3)


def test_build_variant_block_flows_into_grid(saxpy):
    spec, _ = saxpy
    launch = dataclasses.replace(spec.launch, block=("512",))
    variant = build_variant("c1", "src", "saxpy", spec, launch, 132, options=("-O3",))
    # nominal: 2^24 / 512; ragged: ceil(10066329 / 512) = 19661
    assert variant.launches == (Launch((32768, 1, 1), (512, 1, 1), 0),
                                Launch((19661, 1, 1), (512, 1, 1), 0))
    assert (variant.label, variant.source, variant.name, variant.options) == \
        ("c1", "src", "saxpy", ("-O3",))


PARTIAL_CU = "__global__ void partials(const float* x, float* p, int n) {}\n"
PARTIAL_SPEC = """\
kernel partials
size n = 1 << 20
scalar n: int = n
in x: float[n]
out p: float[ceil_div(n, block.x)]
block = 256
grid = ceil_div(n, block.x)
"""


def test_variant_may_not_resize_a_block_dependent_buffer():
    kernel = parse_source(PARTIAL_CU, "p.cu").kernels[0]
    spec = parse_spec(PARTIAL_SPEC, "p.cu.spec")["partials"]
    case = build_problem(spec, kernel).cases[0]
    assert case.args[1] == Buffer("p", "float32", 4096, "out", -1.0, 1.0)
    same = build_variant("c0", "s", "partials", spec, spec.launch, 132)
    assert same.launches[0].grid == (4096, 1, 1)
    with pytest.raises(SpecError) as info:
        build_variant("c1", "s", "partials", spec,
                      dataclasses.replace(spec.launch, block=("512",)), 132)
    assert (info.value.path, info.value.line) == ("p.cu.spec", 5)
    assert info.value.message == (
        "the length of p ('ceil_div(n, block.x)') uses block: block (512, 1, 1) makes it 2048 "
        "elements, but the buffers are sized with the spec's block (256, 1, 1) (4096 elements) "
        "in the nominal run (n=1048576); expected a launch that keeps it")


def test_default_ranges_and_dtypes():
    cu = ("__global__ void k(const int* a, const unsigned char* b, const bool* c, "
          "const __half* h, const double* d, const long* e, float* o) {}\n")
    spec = parse_spec("kernel k\nsize n = 8\nin a: int[n]\nin b: uint8[n]\nin c: bool[n]\n"
                      "in h: half[n]\nin d: double[n] range(-n, n)\nin e: long[n]\n"
                      "out o: float[n]\nblock = 8\ngrid = 1\n")["k"]
    case = resolve_case(spec, parse_source(cu, "k.cu").kernels[0], {"n": 8}, "nominal")
    assert [(a.dtype, a.low, a.high) for a in case.args[:6]] == [
        ("int32", -100.0, 100.0), ("uint8", 0.0, 100.0), ("uint8", 0.0, 2.0),
        ("float16", -1.0, 1.0), ("float64", -8.0, 8.0), ("int64", -100.0, 100.0)]
    assert case.bytes_moved == 8 * (4 + 1 + 1 + 2 + 8 + 8) + 8 * 4  # the inputs, then o
    assert case.flops == 0


def test_resolve_case_validates_first(saxpy):
    spec, kernel = saxpy
    bad = dataclasses.replace(spec, params=spec.params[:-1])
    with pytest.raises(SpecError, match="parameter n \\('int n'\\) is not in the spec"):
        resolve_case(bad, kernel, {"n": 4}, "nominal")
