"""Block-per-row kernels whose block reduction is written with warp shuffles
(``cudalens.optimizer.warp_shuffle``, read by ``block_rows.match``): the row passes rewrite
them and each rewrite computes the original's outputs on the CPU (``block_sim``) at ragged
row lengths; what the model cannot prove is refused with the reason and its line."""

from __future__ import annotations

import math

import pytest

from cudalens.kernel_model.model import readable_body
from cudalens.optimizer import block_rows
from cudalens.optimizer.passes import get
from cudalens.optimizer.passes import launch_config
from cudalens.optimizer.passes import warp_per_row
from cudalens.optimizer.reasons import line_of
from cudalens.spec.model import BufferDecl

import block_sim
from optimizer_fixtures import context_with_spec
from variant_corpus import ROOT
from cudalens.optimizer.context import make_context
from cudalens.target import load_target

SHAPES = ["rowsum_shfl_two_level", "rowsum32_down_helper", "rmsnorm32_xor",
          "softmax_shfl_templates", "rowmax_down_warp0"]


def _corpus(name: str):
    target = load_target(ROOT / "block_per_row" / f"{name}.cu")
    return make_context(target.text, str(target.path), target.kernel.qualified_name,
                        target.spec)


def _small(ctx, rows: int, cols: int) -> dict[str, int]:
    """The spec's sizes: the last is the row length, the others multiply to ``rows``."""
    names = [s.name for s in ctx.spec.sizes]
    values = [1] * (len(names) - 1) + [cols]
    values[0] = rows
    return dict(zip(names, values))


def _outputs(ctx) -> set[str]:
    return {d.name for d in ctx.spec.params if isinstance(d, BufferDecl) and d.role != "in"}


def _close(a, b) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-5)
                                    for x, y in zip(a, b))


def test_the_model_reads_each_shape():
    got = {}
    for name in SHAPES:
        ctx = _corpus(name)
        p, body = readable_body(ctx)
        rows = block_rows.match(p, body)
        got[name] = ([(w.acc, w.combine, w.everyone, w.line) for w in rows.warps],
                     [(t.first.acc, t.first.combine, t.everyone, t.array, t.first.line)
                      for t in rows.levels], rows.one_warp)
    assert got == {
        "rowsum_shfl_two_level": ([], [("acc", "+", True, "parked", 15)], None),
        "rowsum32_down_helper": ([("total", "+", False, 23)], [],
                                 (20, "steps its loop over the row by 32 threads")),
        "rmsnorm32_xor": ([("sq", "+", True, 16)], [],
                          (16, "combines one warp's values only")),
        "softmax_shfl_templates": ([], [("mx", "fmaxf", True, "stash", 30),
                                        ("s", "+", True, "stash", 39)], None),
        "rowmax_down_warp0": ([], [("m", "fmaxf", False, "part", 17)], None),
    }


def _cases():
    for name in SHAPES:
        for pass_name in ("block_per_row", "warp_per_row", "launch_config"):
            for rows, cols in ((5, 77), (3, 7)):  # ragged; shorter than a warp
                yield pytest.param(name, pass_name, rows, cols,
                                   id=f"{name}-{pass_name}-{rows}x{cols}")


@block_sim.needs_gxx
@pytest.mark.parametrize("name,pass_name,rows,cols", list(_cases()))
def test_rewrite_equals_the_original(name, pass_name, rows, cols):
    ctx = _corpus(name)
    p = get(pass_name)
    why = p.check(ctx)
    if pass_name == "launch_config" and name in ("rowsum32_down_helper", "rmsnorm32_xor"):
        assert why is not None and "block of 32 threads, so the block cannot change" in why
        return
    assert why is None, why
    sizes = _small(ctx, rows, cols)
    kernel = ctx.kernel.qualified_name
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes)
    space = p.parameter_space(ctx)
    for params in (space[0], space[-1]):
        result = p.apply(ctx, **params)
        after = block_sim.run(result.source, kernel, ctx.spec, sizes, result.launch)
        for out in _outputs(ctx):
            n = len(before.buffers[out]) - block_sim.GUARD
            assert _close(before.buffers[out][:n], after.buffers[out][:n]), (out, params)
            assert after.buffers[out][n:] == before.buffers[out][n:], out


@block_sim.needs_gxx
def test_the_originals_compute_the_row_values():
    """The simulated originals are the row sums and maxima (so the comparison above compares
    real values, not two copies of untouched memory)."""
    for name, buf, inp, fold in (("rowsum_shfl_two_level", "sums", "m", sum),
                                 ("rowsum32_down_helper", "dst", "x", sum),
                                 ("rowmax_down_warp0", "best", "a", max)):
        ctx = _corpus(name)
        sizes = _small(ctx, 5, 77)
        got = block_sim.run(ctx.text, ctx.kernel.qualified_name, ctx.spec, sizes).buffers
        x = got[inp]
        want = [fold(x[r * 77:(r + 1) * 77]) for r in range(5)]
        assert _close(got[buf][:5], want), name


SPEC = """
kernel k
size rows = 16
size C = 4096
scalar rows: int = rows
scalar C: int = C
in x: float[rows * C]
out y: float[rows * C]
out s: float[rows]
block = {block}
grid = rows
"""

HEAD = """__global__ void k(const float* x, float* y, float* s, int rows, int C)
{
    __shared__ float part[PARTS];
    int r = blockIdx.x;
    int lane = threadIdx.x % 32;
    int warp = threadIdx.x / 32;
    if (r >= rows) return;
    float v = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) v += x[r * C + i];
"""
WARP = "    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);\n"
STORE = "    if (lane == 0) part[warp] = v;\n    __syncthreads();\n"
LOAD = "    v = (lane < blockDim.x / 32) ? part[lane] : 0.0f;\n"
TAIL = "    if (threadIdx.x == 0) s[r] = v;\n}\n"


def _kernel(*parts: str, parts_count: int = 32) -> str:
    """HEAD, ``parts`` and TAIL; ``parts_count`` the slots of the shared partials (0: none,
    the line kept as a comment)."""
    head = HEAD.replace("PARTS", str(parts_count)) if parts_count else \
        HEAD.replace("    __shared__ float part[PARTS];", "    // no shared partials")
    return head + "".join(parts) + TAIL


REFUSALS = [
    # a lone warp reduction, the block 256: only one warp's values would be combined
    (_kernel(WARP), 256, ("the kernel combines one warp's values only (line 10), which "
                          "combines the row only in a block of 32 threads; the spec's block "
                          "is 256"), 10),
    # offsets from 8: two half-warps, not the warp
    (_kernel(WARP.replace("16", "8"), parts_count=32), 32,
     "the shuffle offsets of the loop at line 10 are 8, 4, 2, 1, not 16, 8, 4, 2, 1: the loop "
     "does not combine the 32 lanes of a warp", 10),
    # 8 slots for the warp results: a block of more than 256 threads overflows them
    (_kernel(WARP, STORE, LOAD, WARP, parts_count=8), 256,
     "the shared array part holds 8 warp results (line 11); a block may have 32 warps", 11),
    # the partial count is a constant, not the block's number of warps
    (_kernel(WARP, STORE, LOAD.replace("blockDim.x / 32", "8"), WARP), 256,
     "'v = (lane < 8) ? part[lane] : 0.0f;' (line 13) is not 'v = (lane < blockDim.x / 32) ? "
     "part[lane] : neutral;' (tid < ... too), loading the warp results (one per 32 threads "
     "of the block) with the combination's neutral value", 13),
    # no barrier between the store of the warp results and their load
    (_kernel(WARP, "    if (lane == 0) part[warp] = v;\n    v = v * 1.0f;\n", LOAD, WARP), 256,
     "no __syncthreads(); at line 12 between the store of the warp results and their load",
     12),
    # down shuffles leave the sum in lane 0; every thread reads it
    (_kernel(WARP.replace("xor", "down"), "    for (int i = threadIdx.x; i < C; i += "
             "blockDim.x) y[r * C + i] = x[r * C + i] / v;\n"), 32,
     "'x[r * C + i] / v' (line 11) reads v, which after the reduction at line "
     "10 only thread 0 is sure to hold, outside 'if (tid == 0)'", 11),
    # a shuffle nested in a branch: not a statement of the kernel's outer block
    (_kernel("    if (C > 0) v += __shfl_xor_sync(0xffffffff, v, 1);\n"), 32,
     "'__shfl_xor_sync(0xffffffff, v, 1)' (line 10) exchanges values between lanes other "
     "than as a warp reduction statement of the kernel's outer block (alone in a block of 32 "
     "threads, or the two levels of a block reduction)", 10),
]


@pytest.mark.parametrize("text,block,reason,line", REFUSALS)
def test_row_passes_refuse_what_the_model_cannot_prove(text, block, reason, line):
    ctx = context_with_spec(text, "k", SPEC.format(block=block))
    for p in (warp_per_row, get("block_per_row")):
        got = p.check(ctx)
        assert got == reason and line_of(got) == line, (p, got)


def test_launch_config_refuses_one_warp_and_takes_two_levels():
    lone = context_with_spec(_kernel(WARP, parts_count=0), "k", SPEC.format(block=32))
    got = launch_config.check(lone)
    assert got == ("the kernel combines one warp's values only (line 10): it combines a row "
                   "only in a block of 32 threads, so the block cannot change")
    assert line_of(got) == 10
    two = context_with_spec(_kernel(WARP, STORE, LOAD, WARP), "k", SPEC.format(block=256))
    assert launch_config.check(two) is None
    assert {p["block"] for p in launch_config.parameter_space(two)} >= {(128,), (1024,)}
    small = context_with_spec(_kernel(WARP, STORE, LOAD, WARP, parts_count=8), "k",
                              SPEC.format(block=256))
    got = launch_config.check(small)
    assert got.startswith("the spec's grid (rows) does not depend on block.x") and \
        "the shared array part holds 8 warp results (line 11)" in got
    assert line_of(got) == 11


@block_sim.needs_gxx
@pytest.mark.parametrize("pragma", ["", "    #pragma unroll\n"])
def test_two_level_snippet_rewrites_equal_the_original(pragma):
    """The snippet the refusals start from, accepted (its shuffle loops also after '#pragma
    unroll', which the rewrite drops with them): its sums and its (untouched) y."""
    warp = pragma + WARP
    ctx = context_with_spec(_kernel(warp, STORE, LOAD, warp), "k", SPEC.format(block=256))
    sizes = {"rows": 4, "C": 301}
    before = block_sim.run(ctx.text, "k", ctx.spec, sizes)
    x = before.buffers["x"]
    assert _close(before.buffers["s"][:4], [sum(x[r * 301:(r + 1) * 301]) for r in range(4)])
    for name in ("block_per_row", "warp_per_row", "launch_config"):
        result = get(name).apply(ctx, **get(name).parameter_space(ctx)[0])
        after = block_sim.run(result.source, "k", ctx.spec, sizes, result.launch)
        assert _close(after.buffers["s"], before.buffers["s"]), name
        assert after.buffers["y"] == before.buffers["y"], name
        if name != "launch_config":
            assert "#pragma" not in result.source, name
