"""Pass ``launch_config``: a block-size search that changes only the launch configuration."""

from __future__ import annotations

import re

import pytest

from cudalens.optimizer.context import PassNotApplicable
from cudalens.optimizer.passes import launch_config
from cudalens.spec import expr as spec_expr

from optimizer_fixtures import context, context_with_spec


def test_1d_blocks_exclude_the_baseline():
    ctx = context("elementwise.cu", "saxpy")  # block = 256
    assert launch_config.check(ctx) is None
    assert launch_config.parameter_space(ctx) == (
        {"block": (512,)}, {"block": (128,)}, {"block": (1024,)}, {"block": (64,)})


def test_apply_changes_only_the_block():
    ctx = context("elementwise.cu", "saxpy")
    result = launch_config.apply(ctx, block=(512,))
    assert result.source == ctx.text
    assert result.launch.block == ("512",)
    assert result.launch.grid == ctx.launch.grid == ("ceil_div(n, block.x)",)
    assert result.launch.shared == ctx.launch.shared
    assert result.tags == ("block=512",)
    assert result.explanation == (
        "block of 512 threads (16 warps) instead of 256: changes how many warps each SM holds "
        "(occupancy) and how full the last wave is")


def test_2d_kernel_gets_2d_blocks():
    ctx = context("rejects.cu", "transpose")  # block = 16, 16
    assert launch_config.check(ctx) is None
    assert [p["block"] for p in launch_config.parameter_space(ctx)] == \
        [(32, 8), (32, 4), (32, 16), (32, 32), (64, 4)]
    result = launch_config.apply(ctx, block=(32, 8))
    assert result.launch.block == ("32", "8")
    assert result.tags == ("block=32x8",)
    env = {"w": 1024, "h": 768, "block": (32, 8, 1)}
    assert [spec_expr.evaluate(g, env) for g in result.launch.grid] == [32, 96]


def test_launch_bounds_limit_the_blocks():
    ctx = context("rejects.cu", "bounded")  # __launch_bounds__(128), block = 128
    assert launch_config.parameter_space(ctx) == ({"block": (64,)},)
    with pytest.raises(PassNotApplicable, match=re.escape(
            "launch_config on bounded: block 512 is not one of the blocks to try here (64)")):
        launch_config.apply(ctx, block=(512,))


@pytest.mark.parametrize("kernel,reason", [
    ("tiled_copy", "the kernel declares the fixed-size shared array '__shared__ float "
                   "tile[TILE * TILE];' (line 67), which usually assumes the block size"),
    ("block_templ", "non-type template parameter 'int BLOCK' may fix the block size at "
                    "compile time"),
    ("escapes", "the spec's grid (4096 / 256) does not depend on block.x, so a new block would "
                "change how many elements are covered"),
])
def test_fixture_rejections(kernel, reason):
    ctx = context("rejects.cu", kernel)
    assert launch_config.check(ctx) == reason
    assert launch_config.parameter_space(ctx) == ()
    with pytest.raises(PassNotApplicable, match=re.escape(f"launch_config on {kernel}: {reason}")):
        launch_config.apply(ctx, block=(128,))


KERNEL = """{macros}
__global__ void {bounds} k(const float* x, float* y, int n) {{
    {shared}
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * {factor};
}}
"""

SPEC = """
kernel k
size n = 4096
in x: float[n]
out y: float[{ylen}]
scalar n: int = n
block = {block}
grid = ceil_div(n, block.x)
shared = {shared}
"""


def _ctx(*, macros="", bounds="", shared_decl="", factor="2.0f", ylen="n", block="256",
         shared="0"):
    text = KERNEL.format(macros=macros, bounds=bounds, shared=shared_decl, factor=factor)
    return context_with_spec(text, "k", SPEC.format(ylen=ylen, block=block, shared=shared))


@pytest.mark.parametrize("kwargs,reason", [
    (dict(ylen="n * block.x"), "the length of buffer y (n * block.x) depends on the block"),
    (dict(shared="block.x * 4", shared_decl="extern __shared__ float s[];"),
     "the dynamic shared memory size (block.x * 4) depends on the block"),
    (dict(macros="#define BS 256", factor="(float)BS"),
     "the body uses BS (= 256, the spec's block size) at line 5; the kernel may assume that "
     "block size"),
    (dict(macros="#define K 64", bounds="__launch_bounds__(2 * K)"),
     "__launch_bounds__(2 * K) is not a number the pass can read, so it cannot tell which "
     "block sizes the kernel allows"),
    (dict(block="8, 8, 4"), "the spec's block (8, 8, 4) is 3D; only 1D and 2D are searched"),
    (dict(bounds="__launch_bounds__(256)"), None),
    (dict(macros="#define MAXT 64", bounds="__launch_bounds__(MAXT)", block="64"),
     "no block size other than the spec's fits within __launch_bounds__(64)"),
])
def test_snippet_preconditions(kwargs, reason):
    assert launch_config.check(_ctx(**kwargs)) == reason


def test_dynamic_shared_memory_independent_of_the_block_is_fine():
    ctx = _ctx(shared="1024", shared_decl="extern __shared__ float s[];")
    assert launch_config.check(ctx) is None
    assert launch_config.apply(ctx, block=(128,)).launch.shared == "1024"


def test_launch_bounds_macro_is_read():
    ctx = _ctx(macros="#define MAXT 256", bounds="__launch_bounds__(MAXT)")
    assert [p["block"] for p in launch_config.parameter_space(ctx)] == [(128,), (64,)]
