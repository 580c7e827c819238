"""``coarsen_reduce``'s grouped form (``warps_per_block`` W): blocks of ``32 * W`` threads
over ``ceil_div(G, W)`` blocks, warp w of block b doing what original block ``b * W + w``
did (issue 14: one-warp blocks cap an SM at 32 resident blocks, half its threads). Checked
here: the launch and the text for the examples, the refusals, that nvcc compiles every corpus
file's default form with 16-byte loads, and on the CPU (``block_sim``) that each W gives the
original's outputs at a ragged size (a partial last group of warps and a ragged last
segment), with the buffer aligned and moved off 16 bytes (the scalar loop)."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable
from cudalens.optimizer.passes import coarsen_reduce
from cudalens.spec.model import BufferDecl

import block_sim
from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec
from variant_corpus import Variant, context

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "variants" / "coarsen_reduce"
# its grid, ceil_div(B * T * C, 512), is carried by no scalar parameter: a warp cannot test
# that its original block exists, so the grouped form is not offered
NO_GRID = "min_select_tree.cu"
FILES = sorted(p.name for p in CORPUS.glob("*.cu") if p.name != NO_GRID)
# 5 full segments of the largest original block (512) and a ragged sixth: with blocks of
# 128, 256 or 512 and W = 8 or 4 the last group of warps is partial in every file
RAGGED = 5 * 512 + 77


def _example(name: str):
    from cudalens.optimizer.context import make_context
    from cudalens.target import load_target

    t = load_target(ROOT / "examples" / f"{name}.cu")
    return make_context(t.text, str(t.path), t.kernel.qualified_name, t.spec)


def _ctx(file: str):
    return _example(file.split(":")[1]) if file.startswith("example:") else \
        context(Variant("coarsen_reduce", CORPUS / file))


def test_example_default_is_eight_warps_per_block_with_float4_loads():
    ctx = _example("reduce_sum")
    space = coarsen_reduce.parameter_space(ctx)
    assert space[0] == {"blocks_per_sm": None, "warps_per_block": 8, "vector": True}
    result = coarsen_reduce.apply(ctx, **space[0])
    assert result.launch.block == ("256",)
    assert result.launch.grid == ("ceil_div(ceil_div(n, 256), 8)",)
    assert result.launch.shared == "0"
    assert result.tags == ("warp-per-block", "warps=8", "vec4")
    src = result.source
    assert "    const unsigned int lane = threadIdx.x % 32;\n" \
           "    const unsigned int seg = blockIdx.x * 8 + threadIdx.x / 32;  // the original " \
           "block\n" \
           "    if (blockDim.x != 256 || seg >= (n + 256 - 1) / 256) return;" in src
    assert "    bool whole = reinterpret_cast<size_t>(&in[seg * 256]) % 16 == 0;\n" in src
    assert "if (whole) { unsigned int tid = 255; unsigned int i = seg * 256 + tid; " \
           "whole = i < n; }" in src
    assert "*reinterpret_cast<const float4*>(&in[seg * 256 + t0]);" in src
    assert "const unsigned int t0 = (lane + k * 32) * 4;" in src
    assert "            unsigned int tid = lane + k * 32;\n" \
           "            unsigned int i = seg * 256 + tid;\n" \
           "            acc += (i < n) ? in[i] : 0.0f;\n" in src  # the original's masking
    assert src.rstrip().endswith("    if (lane == 0) partial[seg] = acc;\n}")
    assert "__shared__" not in src and "__syncthreads" not in src
    assert "Blocks of 8 warps (256 threads) over ceil_div(original grid, 8) blocks" in \
        result.explanation


def test_four_warps_and_the_max_example():
    result = coarsen_reduce.apply(_example("reduce_sum"), warps_per_block=4)
    assert (result.launch.block, result.launch.grid) == (("128",),
                                                         ("ceil_div(ceil_div(n, 256), 4)",))
    assert result.tags == ("warp-per-block", "warps=4")
    assert "seg = blockIdx.x * 4 + threadIdx.x / 32;" in result.source
    assert "if (blockDim.x != 128 || seg >= (n + 256 - 1) / 256) return;" in result.source
    mx = coarsen_reduce.apply(_example("reduce_max"), warps_per_block=8, vector=True)
    assert (mx.launch.block, mx.launch.grid) == (("256",), ("ceil_div(ceil_div(n, 512), 8)",))
    assert "for (int k = 0; k < 4; ++k) {" in mx.source  # 512 inputs: 4 float4 per lane
    assert "acc = fmaxf(acc, __shfl_down_sync(0xffffffff, acc, offset));" in mx.source
    assert "if (lane == 0) out[seg] = acc;" in mx.source


SPEC = """
kernel k
size n = 4096
scalar n: int = n
in x: float[n]
out out: float[ceil_div(n, 256)]
block = 256
grid = ceil_div(n, 256)
"""

GRID_DIM_FINAL = """
__global__ void k(const float* x, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int st = 128; st > 0; st >>= 1) {
        if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0] / gridDim.x;
}"""


def test_grouped_form_refusals():
    ctx = context_with_spec(GRID_DIM_FINAL, "k", SPEC)
    assert coarsen_reduce.check(ctx) is None
    assert all("warps_per_block" not in s for s in coarsen_reduce.parameter_space(ctx))
    with pytest.raises(PassNotApplicable) as err:
        coarsen_reduce.apply(ctx, warps_per_block=8)
    assert str(err.value) == ("coarsen_reduce on k: several warps per block: the final "
                              "statement uses gridDim (line 11)")
    atomic = context(Variant("coarsen_reduce", CORPUS / "atomic_total.cu"))
    with pytest.raises(PassNotApplicable, match="several warps per block and blocks_per_sm "
                                                "do not combine"):
        coarsen_reduce.apply(atomic, blocks_per_sm=32, warps_per_block=8)
    with pytest.raises(PassNotApplicable, match="warps_per_block 64 is not 1 to 32"):
        coarsen_reduce.apply(atomic, warps_per_block=64)
    no_grid = context(Variant("coarsen_reduce", CORPUS / NO_GRID))
    assert coarsen_reduce.parameter_space(no_grid) == ({"blocks_per_sm": None},)
    with pytest.raises(PassNotApplicable) as err:
        coarsen_reduce.apply(no_grid, warps_per_block=8)
    assert str(err.value) == ("coarsen_reduce on block_min_select: several warps per block: "
                              "the spec's grid ceil_div(B * T * C, 512) is not written over "
                              "the scalar parameters")


@needs_nvcc
def test_every_grouped_default_compiles_with_vector_loads():
    from concurrent.futures import ThreadPoolExecutor

    files = FILES + ["example:reduce_sum", "example:reduce_max"]
    contexts = [_ctx(f) for f in files]
    results_ = []
    for ctx in contexts:
        space = [s for s in coarsen_reduce.parameter_space(ctx) if "warps_per_block" in s]
        results_.append((space[0], coarsen_reduce.apply(ctx, **space[0])))
    with ThreadPoolExecutor(max_workers=2) as pool:
        built = list(pool.map(lambda r: compile_source(r[1].source, ptx=True), results_))
    for f, (params, _), got in zip(files, results_, built):
        assert got.ok, (f, got.stderr)
        assert "ld.local" not in got.ptx, f
        assert params.get("vector"), f  # every one reads one guarded span
        assert re.search(r"ld\.global(\.nc)?\.v(4|2\.f64|4\.u32|4\.b32)", got.ptx), f
    # the example's lanes: 2 float4 loads on the whole aligned segment, 8 floats otherwise
    ptx = dict(zip(files, built))["example:reduce_sum"].ptx
    assert (len(re.findall(r"ld\.global\.v4\.f32", ptx)),
            len(re.findall(r"ld\.global\.f32", ptx))) == (2, 8)


def _check(ctx, params: dict, shift: int) -> None:
    kernel = ctx.kernel.qualified_name
    result = coarsen_reduce.apply(ctx, **params)
    inputs = [d.name for d in ctx.spec.params if isinstance(d, BufferDecl) and d.role == "in"]
    moved = {name: shift for name in inputs}
    sizes = {ctx.spec.sizes[0].name: RAGGED}
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes, shift=moved)
    after = block_sim.run(result.source, kernel, ctx.spec, sizes, result.launch, shift=moved)
    for name, values in before.buffers.items():
        got = after.buffers[name]
        assert len(got) == len(values), name
        if name in inputs:
            assert got == values, name
            continue
        bad = [(k, x, y) for k, (x, y) in enumerate(zip(values, got))
               if not (x == y or (isinstance(x, float) and
                                  math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-5)))]
        assert not bad, (params, name, bad[:4])


@block_sim.needs_gxx
@pytest.mark.parametrize("file", FILES + ["example:reduce_sum", "example:reduce_max"])
def test_each_group_size_gives_the_originals_outputs_at_a_ragged_size(file):
    ctx = _ctx(file)
    grouped = [s for s in coarsen_reduce.parameter_space(ctx) if "warps_per_block" in s]
    assert {s["warps_per_block"] for s in grouped} == {8, 4}
    first = grouped[0]
    _check(ctx, first, 0)
    _check(ctx, {**first, "warps_per_block": 4}, 0)
    if first.get("vector"):
        _check(ctx, first, 1)  # misaligned by one element: the scalar loop


@block_sim.needs_gxx
def test_under_the_original_launch_a_block_of_another_size_returns_in_range():
    ctx = _example("reduce_sum")
    sizes = {"n": RAGGED}
    before = block_sim.run(ctx.text, "block_sum", ctx.spec, sizes)
    # 8 warps is the original's 256 threads: the extra blocks of the original grid find
    # their segment past it and leave, the others compute the original's partials
    eight = coarsen_reduce.apply(ctx, warps_per_block=8, vector=True)
    got = block_sim.run(eight.source, "block_sum", ctx.spec, sizes, ctx.spec.launch,
                        checked=True)
    assert all(math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-5)
               for x, y in zip(before.buffers["partial"], got.buffers["partial"]))
    # 4 warps: every 256-thread block returns at once; nothing is touched out of range
    four = coarsen_reduce.apply(ctx, warps_per_block=4, vector=True)
    block_sim.run(four.source, "block_sum", ctx.spec, sizes, ctx.spec.launch, checked=True)
    smaller = dataclasses.replace(ctx.spec.launch, block=("64",))
    block_sim.run(eight.source, "block_sum", ctx.spec, sizes, smaller, checked=True)
