"""The row passes' online softmax and grid-stride forms and the stencil tile, simulated on the
CPU (``block_sim``) against the original kernel at small ragged sizes; and their reasons for
not applying, with the line."""

from __future__ import annotations

import math

import pytest

from cudalens.optimizer.passes import block_per_row, stencil_tile, warp_per_row
from cudalens.optimizer.reasons import line_of
from cudalens.spec.model import BufferDecl

import block_sim
from optimizer_fixtures import context_with_spec
from variant_corpus import ROOT, Variant, context, sim_sizes


def _variant(folder, name):
    return Variant(folder, ROOT / folder / name)


def _same_outputs(v, result, launch=None):
    ctx = context(v)
    sizes = sim_sizes(v, ctx)
    kernel = ctx.kernel.qualified_name
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes)
    after = block_sim.run(result.source, kernel, ctx.spec, sizes, launch or result.launch)
    for d in ctx.spec.params:
        if isinstance(d, BufferDecl) and d.role != "in":
            a, b = before.buffers[d.name], after.buffers[d.name]
            n = len(a) - block_sim.GUARD
            assert all(math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-6) for x, y in zip(a, b)), d.name
            assert 77 not in a[:n] and b[n:] == a[n:], d.name


ONLINE = ["softmax_online.cu", "logsumexp.cu"]


@block_sim.needs_gxx
@pytest.mark.parametrize("name", ONLINE)
def test_online_softmax_block_per_row_matches_the_original(name):
    v = _variant("block_per_row", name)
    ctx = context(v)
    result = block_per_row.apply(ctx, block=128, online=True)
    assert result.tags == ("block-per-row+online", "block=128")
    # the max loop is gone: one loop reads the row for max and sum
    max_loop = next(l for l in ctx.text.splitlines() if "= fmaxf(" in l).strip()
    assert max_loop not in result.source and "if (v > m" in result.source
    _same_outputs(v, result)


@block_sim.needs_gxx
@pytest.mark.parametrize("folder,name", [("block_per_row", n) for n in ONLINE] +
                         [("warp_per_row", "softmax_local_x.cu")])
def test_online_softmax_warp_per_row_matches_the_original(folder, name):
    v = _variant(folder, name)
    result = warp_per_row.apply(context(v), warps_per_block=2, online=True)
    assert result.tags == ("warp-per-row+online", "block=64")
    _same_outputs(v, result)


@block_sim.needs_gxx
@pytest.mark.parametrize("name", ["softmax_online.cu", "layernorm_unsigned.cu", "rmsnorm_weight.cu"])
def test_block_per_row_gridstride_is_correct_under_the_users_launch(name):
    v = _variant("block_per_row", name)
    ctx = context(v)
    result = block_per_row.apply(ctx, block=256, gridstride=True)
    assert "row += gridDim.x" in result.source or "r += gridDim.x" in result.source or \
        "i += gridDim.x" in result.source
    _same_outputs(v, result, ctx.spec.launch)  # block 128, grid ceil_div(rows, 128): 1 block


def test_online_is_offered_only_for_a_fusable_pair():
    ctx = context(_variant("warp_per_row", "softmax_rowptr.cu"))  # max from row[0], loop from 1
    assert not any(d.get("online") for d in warp_per_row.parameter_space(ctx))
    with pytest.raises(Exception, match="no max loop followed by a sum of expf"):
        warp_per_row.apply(ctx, online=True)
    ctx = context(_variant("block_per_row", "logsumexp.cu"))
    assert block_per_row.parameter_space(ctx)[0] == {"block": 256, "online": True}


def test_block_per_row_waits_for_long_rows():
    ctx = context(_variant("warp_per_row", "softmax_rowptr.cu"))  # 300 columns
    assert block_per_row.check(ctx) == (
        "rows of 300 columns (at the spec's sizes) are short: a warp per r keeps its lanes "
        "busy, a block per r pays from 1024 columns")
    assert warp_per_row.check(ctx) is None


STENCIL_SPEC = """
kernel k
size n = 5000
scalar n: int = n
scalar m: int = 3
in x: float[n]
out y: float[n]
block = 256
grid = ceil_div(n, block.x)
"""

STENCIL_REJECTS = [
    # the window's width is a runtime scalar: no constant halo
    ("""
__global__ void k(const float* x, float* y, int n, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int j = 0; j < m; ++j)
        if (i + j < n) s += x[i + j];
    if (i < n) y[i] = s;
}""", "the read 'x[i + j]' (line 6) is not x[i + offset] with an offset of constants and "
      "constant-bound loop variables (or such an index clamped with min/max)", 6),
    # one offset only: a copy, nothing shared between threads
    ("""
__global__ void k(const float* x, float* y, int n, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 1 < n) y[i] = 2.0f * x[i + 1];
}""", "every read of x is at offset 1 from i: no neighbours to share", None),
    # a barrier already: the threads cooperate
    ("""
__global__ void k(const float* x, float* y, int n, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __syncthreads();
    if (i > 0 && i < n) y[i] = x[i] - x[i - 1];
}""", "the body uses '__syncthreads' (line 4); threads cooperate already", None),
]


@pytest.mark.parametrize("text,reason,line", STENCIL_REJECTS)
def test_stencil_tile_says_why_not_and_where(text, reason, line):
    got = stencil_tile.check(context_with_spec(text, "k", STENCIL_SPEC))
    assert got == reason and line_of(got) == line


def test_stencil_tile_keeps_the_users_block_first_and_tiles_the_halo_the_offsets_reach():
    ctx = context(_variant("stencil_tile", "padded_input.cu"))
    assert stencil_tile.parameter_space(ctx)[0] == {"block": 256}
    src = stencil_tile.apply(ctx, block=256).source
    assert "__shared__ float in_tile[256 + 6];" in src  # offsets 0..6: no halo below
    assert "in_base + t < n + 6" in src  # bounded by the buffer's length, not the output's


TRANSPOSE_SPEC = """
kernel k
size h = 40
size w = 50
scalar w: int = w
scalar h: int = h
in a: float[h * w]
out b: float[h * w]
block = 32, 8
grid = ceil_div(w, 32), ceil_div(h, 32)
"""

TRANSPOSE_NEAR_MISSES = [
    # the tile loop steps by 4 with 8 rows of threads: rows overlap, not the tile's rows
    """
__global__ void k(const float* a, float* b, int w, int h) {
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 4)
        if (x < w && y + j < h) b[x * h + y + j] = a[(y + j) * w + x];
}""",
    # j used apart from y + j
    """
__global__ void k(const float* a, float* b, int w, int h) {
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < w && y + j < h) b[x * h + y + j] = a[y * w + x + j];
}""",
    # a flat index split by two different divisors
    """
__global__ void k(const float* a, float* b, int w, int h) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < h * w) {
        int r = i / w;
        int c = i % h;
        b[c * h + r] = a[i];
    }
}""",
]


@pytest.mark.parametrize("text", TRANSPOSE_NEAR_MISSES)
def test_transpose_spellings_that_are_not_a_transpose_keep_the_plain_reason(text):
    from cudalens.optimizer.passes import tiled_transpose

    got = tiled_transpose.check(context_with_spec(text, "k", TRANSPOSE_SPEC))
    assert got.startswith("expected the body to start with the two global indices"), got
    assert line_of(got) == 3


def test_plan_explains_the_new_candidates():
    from cudalens.optimizer.plan import make_plan

    plan = make_plan(context(_variant("block_per_row", "logsumexp.cu")))
    first = plan.first_batch[0]
    assert first.passes[-1] == "block_per_row" or "block_per_row" in first.passes
    rec = first.record()
    assert "online softmax" in rec["explanation"] and "Milakov" in rec["explanation"]
    plan = make_plan(context(_variant("stencil_tile", "conv1d_mask.cu")))
    tiled = next(c for c in plan.candidates if "stencil_tile" in c.passes)
    assert "input (offsets -2..2) in shared memory once" in tiled.explanation


SPMV_SPEC = """
kernel {kernel}
size rows = 4096
size per_row = 8
scalar rows: int = rows
scalar per_row: int = per_row
in row_ptr: int[rows + 1]
in col_idx: int[rows * per_row]
in vals: float[rows * per_row]
in x: float[rows]
out y: float[rows]
block = 256
grid = ceil_div(rows, block.x)
"""
GATHERS = [
    # CSR: the loop's bounds come from row_ptr, x is read at a loaded column
    ("spmv_csr", """
__global__ void spmv_csr(const int* row_ptr, const int* col_idx, const float* vals,
                         const float* x, float* y, int rows, int per_row)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        float dot = 0.0f;
        for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j)
            dot += vals[j] * x[col_idx[j]];
        y[row] = dot;
    }
}
""", "the read 'vals[j]' (line 9) is at an index computed from memory (j is computed from "
     "'row_ptr[row]'), not at a constant offset from row: a data-dependent gather, not a "
     "stencil; the pass tiles only reads at constant offsets around the thread's index", 9),
    # the row's bounds through locals, then a column local
    ("spmv_locals", """
__global__ void spmv_locals(const int* row_ptr, const int* col_idx, const float* vals,
                            const float* x, float* y, int rows, int per_row)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const int first = row_ptr[r], last = row_ptr[r + 1];
    float acc = 0.0f;
    for (int k = first; k < last; k++) {
        const int c = col_idx[k];
        acc += vals[k] * x[c];
    }
    y[r] = acc;
}
""", "the read 'col_idx[k]' (line 10) is at an index computed from memory (k is computed from "
     "first: 'row_ptr[r]'), not at a constant offset from r: a data-dependent gather, not a "
     "stencil; the pass tiles only reads at constant offsets around the thread's index", 10),
    # a neighbour gather: x at a column read from memory, no loop
    ("gather_pair", """
__global__ void gather_pair(const int* row_ptr, const int* col_idx, const float* vals,
                            const float* x, float* y, int rows, int per_row)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows) y[i] = x[col_idx[i * per_row]] + row_ptr[i + 1] - row_ptr[i];
}
""", "the read 'x[col_idx[i * per_row]]' (line 6) is at an index computed from memory (it "
     "reads 'col_idx[i * per_row]'), not at a constant offset from i: a data-dependent "
     "gather, not a stencil; the pass tiles only reads at constant offsets around the "
     "thread's index", 6),
    # the gather through a row pointer (the kernel model folds it into vals and x)
    ("gather_rows", """
__global__ void gather_rows(const int* row_ptr, const int* col_idx, const float* vals,
                            const float* x, float* y, int rows, int per_row)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float* v = vals + i * per_row;
    if (i < rows) y[i] = v[0] * x[i] + v[col_idx[i] - col_idx[i]];
}
""", "the read 'v[col_idx[i] - col_idx[i]]' (line 7) is at an index computed from memory (it "
     "reads 'col_idx[i]'), not at a constant offset from i: a data-dependent gather, not a "
     "stencil; the pass tiles only reads at constant offsets around the thread's index", 7),
]


@pytest.mark.parametrize("kernel,text,reason,line", GATHERS, ids=[g[0] for g in GATHERS])
def test_stencil_tile_refuses_data_dependent_reads(kernel, text, reason, line):
    from cudalens.optimizer.plan import make_plan

    plan = make_plan(context_with_spec(text, kernel, SPMV_SPEC.format(kernel=kernel)))
    assert not [c for c in plan.candidates if "stencil_tile" in c.passes]
    [miss] = [n for n in plan.not_applied if n.pass_name == "stencil_tile"]
    assert (miss.reason, miss.line, miss.at_kernel) == (reason, line, False)
