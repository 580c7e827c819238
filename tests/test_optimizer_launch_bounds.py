"""Pass ``launch_bounds``: ``__launch_bounds__`` matched to the candidate's block; where it
goes, when it must not be added (a launch in the file with a larger block), and what ptxas
does with it (a register-hungry kernel capped to fit ``min_blocks`` blocks per SM)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from cudalens.check.compile import compile_check
from cudalens.optimizer.context import PassNotApplicable
from cudalens.optimizer.passes import launch_bounds, launch_config

from nvcc_util import needs_nvcc
from optimizer_fixtures import context, context_with_spec

SPEC = """
kernel k
size n = 4096
scalar n: int = n
in x: float[n]
out y: float[n]
block = {block}
grid = ceil_div(n, block.x)
"""

KERNEL = """{prefix}
__global__ void k(const float* x, float* y, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * 2.0f;
}}
{suffix}"""


def _ctx(block="256", prefix="", suffix=""):
    return context_with_spec(KERNEL.format(prefix=prefix, suffix=suffix), "k",
                             SPEC.format(block=block))


def test_inserted_before_the_name_with_the_block_threads():
    ctx = _ctx()
    assert launch_bounds.check(ctx) is None
    assert launch_bounds.parameter_space(ctx) == ({"min_blocks": None}, {"min_blocks": 8})
    result = launch_bounds.apply(ctx)
    assert "__global__ void __launch_bounds__(256) k(const float* x" in result.source
    assert result.tags == ("bounds=256",)
    assert result.launch == ctx.launch
    assert result.explanation == ("__launch_bounds__(256): ptxas budgets registers for blocks of "
                                  "at most 256 threads (up to 255 per thread) instead of for "
                                  "any block size")
    capped = launch_bounds.apply(ctx, min_blocks=8)
    assert "__launch_bounds__(256, 8) k(" in capped.source
    assert capped.tags == ("bounds=256x8",)
    assert capped.explanation == ("__launch_bounds__(256, 8): at most 32 registers per thread so "
                                  "that 8 blocks (64 warps) fit on each SM, for more occupancy "
                                  "to hide memory latency")


def test_follows_the_block_a_previous_pass_chose():
    ctx = _ctx()
    chosen = launch_config.apply(ctx, block=(512,))
    after = ctx.rewritten(chosen.source, chosen.launch, launch_config.name)
    assert launch_bounds.parameter_space(after) == ({"min_blocks": None}, {"min_blocks": 4})
    assert "__launch_bounds__(512) k(" in launch_bounds.apply(after).source


def test_template_kernel_and_2d_block():
    ctx = context("rejects.cu", "transpose")  # block 16 x 16
    result = launch_bounds.apply(ctx)
    assert "__global__ void __launch_bounds__(256) transpose(const float* in" in result.source


@pytest.mark.parametrize("block,suffix,reason", [
    ("128", "void run(const float* x, float* y, int n) { k<<<n / 256, 256>>>(x, y, n); }",
     "the launch at line 6 uses 256 threads per block, more than the candidate's 128: "
     "__launch_bounds__(128) would make it fail"),
    ("256", "void run(const float* x, float* y, int n, int t) { k<<<n / t, t>>>(x, y, n); }",
     "the launch at line 6 uses block 't', which the pass cannot check against "
     "__launch_bounds__(256)"),
])
def test_launch_sites_that_would_break(block, suffix, reason):
    ctx = _ctx(block=block, suffix=suffix)
    assert launch_bounds.check(ctx) == reason
    assert launch_bounds.parameter_space(ctx) == ()
    with pytest.raises(PassNotApplicable, match=re.escape(f"launch_bounds on k: {reason}")):
        launch_bounds.apply(ctx)


def test_launch_sites_it_can_read():
    suffix = ("#define THREADS 64\nvoid run(const float* x, float* y, int n) {\n"
              "    k<<<n / 64, THREADS>>>(x, y, n);\n    k<<<1, dim3(32, 2)>>>(x, y, n);\n}")
    assert launch_bounds.check(_ctx(block="128", suffix=suffix)) is None


def test_existing_bounds_are_kept():
    ctx = context("rejects.cu", "bounded")
    assert launch_bounds.check(ctx) == "the kernel already has __launch_bounds__(128)"


def test_bad_min_blocks():
    with pytest.raises(ValueError, match=r"min_blocks must be None or 1\.\.8 for 256 threads, "
                                         r"found 9"):
        launch_bounds.apply(_ctx(), min_blocks=9)


HEAVY = """
__global__ void heavy(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v[24];
    #pragma unroll
    for (int j = 0; j < 24; ++j) v[j] = x[(i + j * 977) % n];
    float acc = 0.0f;
    #pragma unroll
    for (int j = 0; j < 24; ++j)
        #pragma unroll
        for (int k = 0; k < 24; ++k) acc += v[j] * v[k] * (j - k);
    y[i] = acc;
}
"""


@needs_nvcc
def test_min_blocks_caps_the_registers_ptxas_uses():
    ctx = context_with_spec(HEAVY, "heavy", SPEC.replace("kernel k", "kernel heavy")
                            .format(block="256"))
    plain = compile_check("heavy.cu", ctx.text).kernel("heavy")
    capped = compile_check("heavy.cu", launch_bounds.apply(ctx, min_blocks=8).source).kernel("heavy")
    assert plain.registers > 32
    assert capped.registers <= 32
    two = dataclasses.replace(ctx.spec, launch=dataclasses.replace(ctx.launch, block=("512",)))
    ctx2 = ctx.rewritten(ctx.text, two.launch, "launch_config")
    half = compile_check("heavy.cu", launch_bounds.apply(ctx2, min_blocks=2).source).kernel("heavy")
    assert half.registers <= 64
