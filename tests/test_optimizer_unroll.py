"""Pass ``unroll``: ``#pragma unroll`` on counted loops (fixed-trip loops fully, run-time loops
by a factor); the pragma's placement, the loops it leaves alone, and that the result compiles
with nvcc and is unrolled (the fixed loop's counter disappears from the PTX)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable, make_context
from cudalens.optimizer.passes import unroll
from cudalens.target import load_target

from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SPEC = """
kernel k
size n = 4096
scalar n: int = n
in x: float[n]
out y: float[n]
block = 256
grid = ceil_div(n, block.x)
"""


def _ctx(body: str, prefix: str = ""):
    text = prefix + ("__global__ void k(const float* x, float* y, int n) {\n"
                     "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "    if (i >= n) return;\n" + body + "\n}\n")
    return context_with_spec(text, "k", SPEC)


def _example(name):
    target = load_target(EXAMPLES / f"{name}.cu")
    return make_context(target.text, str(target.path), target.kernel.name, target.spec)


def test_stencil_loop_with_macro_bounds_is_fully_unrolled():
    ctx = _example("stencil1d")
    assert unroll.check(ctx) is None
    assert unroll.parameter_space(ctx) == ({"factor": None},)
    result = unroll.apply(ctx)
    assert "    #pragma unroll\n    for (int r = -RADIUS; r <= RADIUS; ++r) {" in result.source
    assert result.source.replace("    #pragma unroll\n", "", 1) == ctx.text
    assert result.tags == ("unroll",)
    assert result.launch == ctx.launch
    assert result.explanation.startswith("fixed-trip loop at line 17 (7 iterations) fully "
                                         "unrolled: no counter, compare or branch")


def test_run_time_loops_get_a_factor():
    ctx = _example("matmul")
    assert unroll.parameter_space(ctx) == ({"factor": 4}, {"factor": 8}, {"factor": 2})
    result = unroll.apply(ctx, factor=8)
    assert "        #pragma unroll 8\n        for (int p = 0; p < k; ++p) {" in result.source
    assert result.tags == ("unroll=8",)
    assert result.explanation == ("run-time loop at line 10 unrolled 8x: 8 iterations' "
                                  "independent loads issued back to back per trip and 1/8 of "
                                  "the loop's compares and branches")
    with pytest.raises(PassNotApplicable, match="every counted loop has a run-time trip count "
                                                r"\(lines 10\); give a factor"):
        unroll.apply(ctx, factor=None)


def test_nested_fixed_loops_and_constant_locals():
    ctx = _example("conv2d")
    result = unroll.apply(ctx)
    assert result.source.count("#pragma unroll\n") == 2
    assert "fixed-trip loops at line 14 (3 iterations), line 15 (3 iterations)" in \
        result.explanation
    ctx = _ctx("    const int taps = 4;\n    float a = 0.0f;\n"
               "    for (int t = taps - 1; t >= 0; --t) a += x[(i + t) % n];\n    y[i] = a;")
    result = unroll.apply(ctx)
    assert "    #pragma unroll\n    for (int t = taps - 1; t >= 0; --t)" in result.source
    assert "(4 iterations)" in result.explanation


@pytest.mark.parametrize("body,reason", [
    ("    #pragma unroll 2\n    for (int t = 0; t < 4; ++t) y[i] += x[i];",
     "no loop to unroll: line 5 already has an unroll pragma"),
    ("    float a = 0.0f; for (int t = 0; t < 4; ++t) a += x[i];\n    y[i] = a;",
     "no loop to unroll: line 4 does not start its line"),
    ("    for (int t = 1; t < n; t *= 2) y[i] += x[i];",
     "no loop to unroll: line 4 is not a counted loop with a constant step"),
    ("    for (int t = 0; t < 8; ++t) { y[i] += x[i]; t += 1; }",
     "no loop to unroll: line 4 is not a counted loop with a constant step"),
    ("    for (int t = 0; t < 1000; ++t) y[i] += x[i];",
     "no loop to unroll: line 4 runs 1000 times (more than 64)"),
    ("    for (int t = 0; t < n; t += 2) { y[i] += x[i]; __syncthreads(); }",
     "no loop to unroll: line 4 holds a barrier (its trips are the block's phases)"),
    ("    y[i] = x[i];", "kernel k has no for loop"),
])
def test_loops_left_alone_say_why(body, reason):
    ctx = _ctx(body)
    assert unroll.check(ctx) == reason
    assert unroll.parameter_space(ctx) == ()
    with pytest.raises(PassNotApplicable, match=re.escape(f"unroll on k: {reason}")):
        unroll.apply(ctx, factor=4)


def test_bad_factor():
    with pytest.raises(ValueError, match=r"factor must be None or one of \(4, 8, 2\), found 3"):
        unroll.apply(_example("matmul"), factor=3)


@needs_nvcc
def test_factor_sets_how_many_loads_each_trip_issues():
    # nvcc unrolls matmul's k loop by 4 on its own; the pragma's factor changes that: the PTX
    # holds 2 loads per unrolled iteration plus the remainder loop's
    ctx = _example("matmul")
    loads = {}
    for factor in (None, 2, 8):
        source = ctx.text if factor is None else unroll.apply(ctx, factor=factor).source
        compiled = compile_source(source, ptx=True)
        assert compiled.ok, compiled.stderr
        loads[factor] = compiled.ptx.count("ld.global")
    assert loads[2] < loads[None] < loads[8]
    assert loads[8] >= 2 * 8


@needs_nvcc
@pytest.mark.parametrize("name", ["conv2d", "stencil1d", "softmax"])
def test_unrolled_examples_compile(name):
    ex = _example(name)
    params = unroll.parameter_space(ex)[0]
    compiled = compile_source(unroll.apply(ex, **params).source)
    assert compiled.ok, compiled.stderr
