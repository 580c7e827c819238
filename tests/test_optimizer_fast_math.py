"""Pass ``fast_math``: hardware intrinsics or ``-use_fast_math`` as candidates the runner's
tolerance judges; which kernels qualify, what is rewritten, and what the compiler emits."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable, make_context
from cudalens.optimizer.passes import fast_math, tiled_matmul, warp_reduce
from cudalens.target import load_target

from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _example(name):
    target = load_target(EXAMPLES / f"{name}.cu")
    return make_context(target.text, str(target.path), target.kernel.name, target.spec)


def test_softmax_intrinsics_rewrite_every_expf_of_the_kernel():
    ctx = _example("softmax")
    assert fast_math.check(ctx) is None
    assert fast_math.parameter_space(ctx) == ({"mode": "intrinsics"}, {"mode": "option"})
    result = fast_math.apply(ctx, mode="intrinsics")
    assert result.source.count("__expf(") == 2 and "expf(xr" not in result.source.replace(
        "__expf(xr", "")
    assert result.source.replace("__expf(", "expf(") == ctx.text
    assert result.options == ()
    assert result.tags == ("intrinsics",)
    assert result.explanation == (
        "hardware math intrinsics (expf -> __expf): a few special-function-unit instructions "
        "instead of a software sequence per call; not exact: offered only if the runner finds "
        "every output within the spec's tolerance of the original's")


def test_option_mode_keeps_the_source_and_adds_the_flag():
    ctx = _example("layernorm")
    assert fast_math.parameter_space(ctx) == ({"mode": "option"},)  # rsqrtf has no __ form
    result = fast_math.apply(ctx, mode="option")
    assert result.source == ctx.text
    assert result.options == ("-use_fast_math",)
    assert result.tags == ("fastmath",)
    assert result.explanation.startswith("compiled with -use_fast_math (rsqrtf, division become "
                                         "approximate hardware instructions; denormals flush "
                                         "to zero); not exact")
    with pytest.raises(PassNotApplicable, match="the body calls none of"):
        fast_math.apply(ctx, mode="intrinsics")


SPEC = """
kernel k
size n = 4096
scalar n: int = n
in x: {t}[n]
out y: {t}[n]
block = 256
grid = ceil_div(n, block.x)
"""


NO_FLOAT = ("the kernel does no single-precision arithmetic (no float data in the spec, no "
            "float variable or literal in the body); fast math changes only single-precision "
            "arithmetic")


@pytest.mark.parametrize("t,body,reason", [
    ("int", "y[i] = x[i] / 3;", NO_FLOAT),
    ("double", "y[i] = exp(x[i]);", NO_FLOAT),
    ("double", "y[i] = x[i] / 3.0;", NO_FLOAT),  # 3.0 is a double literal
    ("bfloat16", "y[i] = __hadd(x[i], x[i]);", NO_FLOAT),
    ("float", "y[i] = x[i] * 2.0f + 1.0f;", "the kernel calls no single-precision math function "
                                            "and does not divide; fast math would change "
                                            "nothing"),
    ("float", "y[i] = x[i] * (float)(i / 3);", "the kernel calls no single-precision math "
                                               "function and does not divide; fast math would "
                                               "change nothing"),
])
def test_kernels_fast_math_cannot_change(t, body, reason):
    ctype = {"int": "int", "double": "double", "float": "float", "bfloat16": "__nv_bfloat16"}[t]
    text = ("#include <cuda_bf16.h>\n" if t == "bfloat16" else "") + (
        f"__global__ void k(const {ctype}* x, {ctype}* y, int n) {{\n"
        f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {body}\n}}\n")
    ctx = context_with_spec(text, "k", SPEC.format(t=t))
    assert fast_math.check(ctx) == reason
    assert fast_math.parameter_space(ctx) == ()
    with pytest.raises(PassNotApplicable, match=re.escape(f"fast_math on k: {reason}")):
        fast_math.apply(ctx, mode="option")


@pytest.mark.parametrize("t", ["bfloat16", "half"])
def test_narrow_buffers_computed_in_float_follow_the_arithmetic(t):
    ctype = {"bfloat16": "__nv_bfloat16", "half": "__half"}[t]
    to, back = {"bfloat16": ("__bfloat162float", "__float2bfloat16"),
                "half": ("__half2float", "__float2half")}[t]
    header = {"bfloat16": "cuda_bf16.h", "half": "cuda_fp16.h"}[t]
    text = (f"#include <{header}>\n__global__ void k(const {ctype}* x, {ctype}* y, int n) {{\n"
            f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {{\n"
            f"        float v = {to}(x[i]);\n"
            f"        y[i] = {back}(expf(v) * 1.0f / sqrtf(v * v + 1.0f));\n    }}\n}}\n")
    ctx = context_with_spec(text, "k", SPEC.format(t=t))
    assert fast_math.check(ctx) is None
    assert fast_math.parameter_space(ctx) == ({"mode": "intrinsics"}, {"mode": "option"})
    assert "__expf(v)" in fast_math.apply(ctx, mode="intrinsics").source
    assert fast_math.apply(ctx, mode="option").explanation.startswith(
        "compiled with -use_fast_math (expf, sqrtf, division become")
    only_literal = text.replace(f"expf(v) * 1.0f / sqrtf(v * v + 1.0f)", "v * 2.0f")
    assert fast_math.check(context_with_spec(only_literal, "k", SPEC.format(t=t))) == (
        "the kernel calls no single-precision math function and does not divide; fast math "
        "would change nothing")


def test_float_division_counts():
    text = ("__global__ void k(const float* x, float* y, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = 1.0f / x[i];\n}\n")
    ctx = context_with_spec(text, "k", SPEC.format(t="float"))
    assert fast_math.parameter_space(ctx) == ({"mode": "option"},)
    assert "(division become" in fast_math.apply(ctx, mode="option").explanation


def test_integer_index_arithmetic_of_generated_code_does_not_count():
    for name, p in (("reduce_sum", warp_reduce), ("matmul", tiled_matmul)):
        ctx = _example(name)
        result = p.apply(ctx)
        after = ctx.rewritten(result.source, result.launch, p.name)
        assert fast_math.check(after) == ("the kernel calls no single-precision math function "
                                          "and does not divide; fast math would change nothing")


def test_bad_mode():
    with pytest.raises(ValueError, match=r"mode must be one of \('intrinsics', 'option'\), "
                                         r"found 'fast'"):
        fast_math.apply(_example("softmax"), mode="fast")


@needs_nvcc
def test_intrinsic_compiles_to_the_approximate_instruction():
    ctx = _example("softmax")
    exact = compile_source(ctx.text, ptx=True)
    fast = compile_source(fast_math.apply(ctx).source, ptx=True)
    assert exact.ok and fast.ok, fast.stderr
    # __expf is one ex2.approx per call; expf a longer, range-reduced sequence
    assert "ex2.approx" in fast.ptx
    assert len(fast.ptx.splitlines()) < len(exact.ptx.splitlines())
