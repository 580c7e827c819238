"""Pass ``tiled_transpose``: naive 2D transposes staged through a padded shared-memory tile.

Positive cases are real-world spellings (the example, the other index order, a template with
an index macro, ``size_t`` casts and an early return, ``__ldg`` through a local index, a
scaled copy); each rewrite keeps the signature, compiles with nvcc, and computes the same
outputs as the original when every block is simulated on the CPU with real barriers
(``block_sim``), for sizes that are not multiples of the tile. Negative cases assert the
reason.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable, make_context
from cudalens.optimizer.passes import tiled_transpose
from cudalens.source.parser import parse_source
from cudalens.target import load_target

import block_sim
from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SPEC = """
kernel {kernel}
size rows = 96
size cols = 64
scalar rows: int = rows
scalar cols: int = cols
{extra}in in: {t}[rows * cols]
out out: {t}[rows * cols]
block = 16, 16
grid = ceil_div({gx}, block.x), ceil_div({gy}, block.y)
"""

VARIANTS = {
    # the other index order: x runs along rows, so the original's reads are the strided side
    "x_is_row": ("""
__global__ void t_xrow(const float* in, float* out, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (col < cols && row < rows) {
        out[col * rows + row] = in[row * cols + col];
    }
}
""", "t_xrow", "float", "rows", "cols", ""),
    # a template with an index macro, size_t casts and an early return
    "template_macro": ("""
#define IDX(r, c, ld) ((r) * (ld) + (c))
template <typename T>
__global__ void t_tmpl(const T* __restrict__ in, T* __restrict__ out, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = threadIdx.y + blockDim.y * blockIdx.y;
    if (r >= rows || c >= cols) return;
    out[IDX((size_t)c, r, rows)] = in[IDX(static_cast<size_t>(r), c, cols)];
}
template __global__ void t_tmpl<double>(const double*, double*, int, int);
""", "t_tmpl", "double", "cols", "rows", ""),
    # __ldg through local index variables, and a scale factor
    "ldg_locals_scaled": ("""
__global__ void t_scaled(const float* in, float* out, int rows, int cols, float alpha) {
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < cols && y < rows) {
        const unsigned int src = y * cols + x;
        const unsigned int dst = x * rows + y;
        out[dst] = alpha * __ldg(&in[src]);
    }
}
""", "t_scaled", "float", "cols", "rows", "scalar alpha: float = 0.5\n"),
}


def _variant(name: str):
    text, kernel, t, gx, gy, extra = VARIANTS[name]
    spec = SPEC.format(kernel=kernel, t=t, gx=gx, gy=gy, extra=extra)
    return context_with_spec(text, kernel, spec), kernel


def _example():
    target = load_target(EXAMPLES / "transpose.cu")
    return make_context(target.text, str(target.path), target.kernel.name, target.spec)


def _signature(source: str, kernel: str):
    return [(p.name, p.type, p.is_pointer, p.is_const, p.is_restrict)
            for p in parse_source(source, "x.cu").kernel(kernel).parameters]


def test_example_rewrite_structure_launch_and_explanation():
    ctx = _example()
    assert tiled_transpose.check(ctx) is None
    assert tiled_transpose.parameter_space(ctx) == (
        {"block_rows": 8}, {"block_rows": 16}, {"block_rows": 4}, {"block_rows": 32})
    result = tiled_transpose.apply(ctx, block_rows=8)
    assert _signature(result.source, "transpose_naive") == _signature(ctx.text, "transpose_naive")
    src = result.source
    assert "__shared__ float tile[kTile][kTile + 1];" in src
    assert src.count("__syncthreads();") == 1
    # read phase: threadIdx.x along col (in's contiguous index); write phase: along row
    assert "const int col = blockIdx.x * kTile + threadIdx.x;" in src
    assert "tile[j][threadIdx.x] = in[row * cols + col];" in src
    assert "const int row = blockIdx.y * kTile + threadIdx.x;" in src
    assert "out[col * rows + row] = tile[threadIdx.x][j];" in src
    assert result.launch.block == ("32", "8")
    assert result.launch.grid == ("ceil_div(cols, 32)", "ceil_div(rows, 32)")
    assert result.tags == ("tiled-transpose", "block=32x8")
    assert result.explanation.startswith(
        "32x32 shared-memory tile padded to 33 columns: reads of in and writes of out are both "
        "coalesced (a warp moves 128 contiguous bytes per request instead of touching 32 "
        "separate 32-byte sectors, 8x the bytes it needs, on the strided side)")
    assert "bank conflicts" in result.explanation


def test_other_index_order_swaps_the_tile_roles():
    ctx, kernel = _variant("x_is_row")
    assert tiled_transpose.check(ctx) is None
    result = tiled_transpose.apply(ctx, block_rows=16)
    # in is contiguous along col (the y index here), so blockIdx.x walks col tiles
    assert "const int col = blockIdx.x * kTile + threadIdx.x;" in result.source
    assert "const int row = blockIdx.y * kTile + j;" in result.source
    assert result.launch.grid == ("ceil_div(cols, 32)", "ceil_div(rows, 32)")
    assert result.launch.block == ("32", "16")


def test_template_macro_keeps_the_macro_and_uses_t():
    ctx, kernel = _variant("template_macro")
    result = tiled_transpose.apply(ctx)
    assert "__shared__ T tile[kTile][kTile + 1];" in result.source
    assert "out[IDX((size_t)c, r, rows)] = tile[threadIdx.x][j];" in result.source
    assert "if (!(r >= rows || c >= cols)) {" in result.source
    assert _signature(result.source, kernel) == _signature(ctx.text, kernel)


def test_locals_are_kept_only_where_needed():
    ctx, _ = _variant("ldg_locals_scaled")
    src = tiled_transpose.apply(ctx).source
    read, write = src.split("__syncthreads();")
    assert "const unsigned int src = y * cols + x;" in read and "dst" not in read
    assert "const unsigned int dst = x * rows + y;" in write and "src =" not in write
    assert "tile[j][threadIdx.x] = alpha * __ldg(&in[src]);" in read


@needs_nvcc
def test_every_rewrite_compiles():
    contexts = [_example()] + [_variant(n)[0] for n in VARIANTS]
    sources = [tiled_transpose.apply(ctx, block_rows=r).source
               for ctx in contexts for r in (8, 32)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(compile_source, sources))
    for source, compiled in zip(sources, results):
        assert compiled.ok, compiled.stderr


@block_sim.needs_gxx
@pytest.mark.parametrize("name,block_rows", [("example", 8), ("x_is_row", 16),
                                             ("template_macro", 8), ("ldg_locals_scaled", 4)])
def test_same_outputs_as_the_original_on_cpu(name, block_rows):
    if name == "example":
        ctx, kernel, sizes = _example(), "transpose_naive", {"rows": 45, "cols": 70}
    else:
        (ctx, kernel), sizes = _variant(name), {"rows": 37, "cols": 66}
    result = tiled_transpose.apply(ctx, block_rows=block_rows)
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes)
    after = block_sim.run(result.source, kernel, ctx.spec, sizes, result.launch)
    assert after.buffers == before.buffers
    # the outputs were written (not left at the poison 77), the guards were not
    out = before.buffers["out"]
    n = sizes["rows"] * sizes["cols"]
    assert 77 not in out[:n] and out[n:] == [77] * block_sim.GUARD


REJECTS = [
    ("""
__global__ void k(const float* in, float* out, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) out[row * cols + col] = in[row * cols + col];
}""", "in and out are both contiguous along col: a copy, not a transpose (already coalesced "
      "on both sides)"),
    ("""
__global__ void k(const float* in, float* out, int rows, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) out[i] = in[i];
}""", "expected the body to start with the two global indices"),
    ("""
__global__ void k(const float* in, float* out, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        out[col * rows + row] = in[row * cols + col];
        out[0] = 1.0f;
    }
}""", "expected only local declarations before the final store, found 'out[col * rows + row] "
      "= in[row * cols + col];' at line 6"),
    ("""
__global__ void k(const float* in, float* out, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) out[col * rows + row] = in[row * cols + col] + in[0];
}""", "expected the stored value to read one other buffer once as in[...], found reads "
      "'in[row * cols + col]' (line 5), 'in[0]' (line 5)"),
    ("""
__device__ float f(float v);
__global__ void k(const float* in, float* out, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) out[col * rows + row] = f(in[row * cols + col]);
}""", "the body calls 'f(in[row * cols + col])' (line 6), which may have side effects or "
      "depend on the thread"),
    ("""
__global__ void k(const float* in, float* out, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows) out[col * rows + row] = in[row * cols + col];
}""", "the guard at line 5 does not bound col"),
    ("""
__global__ void k(const float* in, float* out, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) out[col * col + row] = in[row * cols + col];
}""", "the output index 'col * col + row' (line 5) is not affine in col"),
    ("""
__global__ void k(const float* in, float* out, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) out[col * rows + row] = in[row * cols + col];
}
void run(float* d, int r, int c) { k<<<dim3(c / 16, r / 16), dim3(16, 16)>>>(d, d, r, c); }
""", "the launch at line 7 passes 'd' as both in and out: the pointers alias"),
]

REJECT_SPEC = SPEC.format(kernel="k", t="float", gx="cols", gy="rows", extra="")


@pytest.mark.parametrize("text,reason", REJECTS)
def test_rejected_kernels_say_why(text, reason):
    ctx = context_with_spec(text, "k", REJECT_SPEC)
    got = tiled_transpose.check(ctx)
    assert got is not None and got.startswith(reason), got
    with pytest.raises(PassNotApplicable, match=re.escape(f"tiled_transpose on k: {reason}")):
        tiled_transpose.apply(ctx)


def test_spec_that_ties_a_length_to_the_block_is_rejected():
    text = VARIANTS["x_is_row"][0]
    spec = REJECT_SPEC.replace("kernel k", "kernel t_xrow").replace(
        "out out: float[rows * cols]", "out out: float[rows * cols + block.x]")
    ctx = context_with_spec(text, "t_xrow", spec)
    assert tiled_transpose.check(ctx) == ("the length of buffer out (rows * cols + block.x) "
                                          "depends on the block")


def test_bad_block_rows_value():
    with pytest.raises(ValueError, match=r"block_rows must be one of \(8, 16, 4, 32\), found 12"):
        tiled_transpose.apply(_example(), block_rows=12)
