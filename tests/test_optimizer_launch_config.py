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


# A transpose whose blocks each own a fixed 32x32 tile (TILE_DIM-style names), without shared
# memory: the grid is tiled by the constants, so a block change would leave elements
# uncovered (fewer rows per block) or cover them twice.
TILED_SPEC = """
kernel {kernel}
size n = 1000
scalar n: int = n
in src: float[n * n]
out dst: float[n * n]
block = 32, 8
grid = ceil_div(n, block.x), ceil_div(n, block.x)
"""
TILED_KERNELS = [
    ("tile_consts", """
const int TILE_DIM = 32;
const int BLOCK_ROWS = 8;

__global__ void tile_consts(const float* src, float* dst, int n)
{
    int x = threadIdx.x + blockIdx.x * TILE_DIM;
    int y = threadIdx.y + blockIdx.y * TILE_DIM;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < n && y + j < n)
            dst[x * n + y + j] = src[(y + j) * n + x];
}
""", "'blockIdx.x * TILE_DIM' (line 7) tiles the grid by TILE_DIM (= 32), not by blockDim.x: "
     "each block covers a fixed 32-wide tile along x, so another block would leave elements "
     "uncovered or cover them twice", 7),
    ("tile_literal", """
__global__ void tile_literal(const float* src, float* dst, int n)
{
    const int col = threadIdx.x + 32 * blockIdx.x;
    const int row0 = (blockIdx.y) * 32 + threadIdx.y;
    for (int r = row0; r < row0 + 32; r += 8)
        if (col < n && r < n) dst[col * n + r] = src[r * n + col];
}
""", "'32 * blockIdx.x' (line 4) tiles the grid by 32, not by blockDim.x: each block covers a "
     "fixed 32-wide tile along x, so another block would leave elements uncovered or cover "
     "them twice", 4),
    ("tile_constexpr_y", """
#define ROWS 8
constexpr int kTile = 32;
__global__ void tile_constexpr_y(const float* src, float* dst, int n)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = threadIdx.y + (blockIdx.y * kTile);
    for (int j = 0; j < kTile; j += ROWS)
        if (x < n && y + j < n) dst[x * n + y + j] = src[(y + j) * n + x];
}
""", "'blockIdx.y * kTile' (line 7) tiles the grid by kTile (= 32), not by blockDim.y: each "
     "block covers a fixed 32-wide tile along y, so another block would leave elements "
     "uncovered or cover them twice", 7),
    ("tile_shared", """
#define TILE_DIM 32
#define BLOCK_ROWS 8
__global__ void tile_shared(const float* src, float* dst, int n)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = threadIdx.x + blockIdx.x * TILE_DIM;
    int y = threadIdx.y + blockIdx.y * TILE_DIM;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < n && y + j < n) tile[threadIdx.y + j][threadIdx.x] = src[(y + j) * n + x];
    __syncthreads();
    x = threadIdx.x + blockIdx.y * TILE_DIM;
    y = threadIdx.y + blockIdx.x * TILE_DIM;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < n && y + j < n) dst[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
""", "the kernel declares the fixed-size shared array '__shared__ float tile[TILE_DIM]"
     "[TILE_DIM + 1];' (line 6), which usually assumes the block size", 6),
]


@pytest.mark.parametrize("kernel,text,reason,line", TILED_KERNELS,
                         ids=[k[0] for k in TILED_KERNELS])
def test_a_grid_tiled_by_a_constant_keeps_its_block(kernel, text, reason, line):
    from cudalens.optimizer.plan import make_plan

    plan = make_plan(context_with_spec(text, kernel, TILED_SPEC.format(kernel=kernel)))
    assert not [c for c in plan.candidates if "launch_config" in c.passes]
    [miss] = [n for n in plan.not_applied if n.pass_name == "launch_config"]
    assert (miss.reason, miss.line, miss.at_kernel) == (reason, line, False)


@pytest.mark.parametrize("index", [
    "blockIdx.x * blockDim.x + threadIdx.x",
    "4 * blockIdx.x * blockDim.x + threadIdx.x",  # the product's blockDim.x: a free block
    "threadIdx.x + blockIdx.x * (blockDim.x * 2)",
])
def test_a_grid_tiled_by_the_block_keeps_its_block_search(index):
    from cudalens.optimizer.plan import make_plan

    text = f"""
const int SCALE = 3;
__global__ void free_block(const float* src, float* dst, int n)
{{
    int i = {index};
    if (i < n) dst[i] = SCALE * src[i];
}}
"""
    spec = """
kernel free_block
size n = 4096
scalar n: int = n
in src: float[n]
out dst: float[n]
block = 256
grid = ceil_div(n, block.x)
"""
    plan = make_plan(context_with_spec(text, "free_block", spec))
    blocks = [c.parameters["block"] for c in plan.candidates if c.passes == ("launch_config",)]
    assert sorted(blocks, key=int) == ["64", "128", "512", "1024"]  # search order aside
    assert "launch_config" not in {n.pass_name for n in plan.not_applied}
