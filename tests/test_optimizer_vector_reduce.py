"""``coarsen_reduce``'s vector form (``vector=True``): 16-byte loads of a block's inputs where
they are all there and start aligned, the scalar loop elsewhere. The plan offers it beside
the scalar form; nvcc compiles it with vector loads; on the CPU (``block_sim``) it computes
the original's outputs at ragged sizes with the buffer's pointer aligned and moved off 16
bytes (run with the alignment check, so a vector load at a misaligned address fails); and
kernels whose loads are not one guarded span are refused with the reason and the line."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable
from cudalens.optimizer.passes import coarsen_reduce
from cudalens.optimizer.plan import make_plan
from cudalens.optimizer.reasons import line_of
from cudalens.spec.model import BufferDecl

import block_sim
from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec
from variant_corpus import Variant, context

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "variants" / "coarsen_reduce"
# two elements per thread (g and g + 256): no contiguous span, the vector form refuses it
TWO_PER_THREAD = "min_select_tree.cu"
FILES = sorted(p.name for p in CORPUS.glob("*.cu") if p.name != TWO_PER_THREAD)


def _example(name: str):
    from cudalens.optimizer.context import make_context
    from cudalens.target import load_target

    t = load_target(ROOT / "examples" / f"{name}.cu")
    return make_context(t.text, str(t.path), t.kernel.qualified_name, t.spec)


def test_plan_offers_the_vector_form_beside_the_scalar_one_in_the_first_batch():
    plan = make_plan(_example("reduce_sum"))
    labels = {c.label: c for c in plan.candidates if "coarsen_reduce" in c.passes}
    assert {"warp-per-block", "warp-per-block vec4", "restrict warp-per-block vec4",
            "warp-per-block warps=8 vec4", "warp-per-block warps=8"} <= set(labels)
    # the grouped forms (8 warps per block) are the expected best: they go first
    assert labels["warp-per-block warps=8 vec4"].first_batch
    assert labels["restrict warp-per-block warps=8 vec4"].first_batch
    assert labels["warp-per-block warps=8"].first_batch
    assert labels["warp-per-block warps=8 vec4"].launch.block == ("256",)


def test_example_vector_form_tests_the_address_and_the_bound_then_loads_float4():
    ctx = _example("reduce_sum")
    assert coarsen_reduce.parameter_space(ctx) == (
        {"blocks_per_sm": None, "warps_per_block": 8, "vector": True},
        {"blocks_per_sm": None, "warps_per_block": 4, "vector": True},
        {"blocks_per_sm": None, "warps_per_block": 8},
        {"blocks_per_sm": None, "warps_per_block": 4},
        {"blocks_per_sm": None}, {"blocks_per_sm": None, "vector": True})
    result = coarsen_reduce.apply(ctx, vector=True)
    src = result.source
    assert result.tags == ("warp-per-block", "vec4")
    assert result.launch.block == ("32",) and result.launch.grid == ("ceil_div(n, 256)",)
    assert "    bool whole = blockDim.x == 32 && " \
           "reinterpret_cast<size_t>(&in[blockIdx.x * 256]) % 16 == 0;\n" in src
    assert "    if (whole) { unsigned int tid = 255; unsigned int i = blockIdx.x * 256 + tid; " \
           "whole = i < n; }  // the original's bound, for the block's last thread\n" in src
    assert "*reinterpret_cast<float4*>(elems) = " \
           "*reinterpret_cast<const float4*>(&in[blockIdx.x * 256 + t0]);" in src
    assert "for (int k = 0; k < 2; ++k) {" in src and "for (int k = 0; k < 8; ++k) {" in src
    assert "acc += (i < n) ? elems[j] : 0.0f;" in src  # the user's statement per element
    assert "acc += (i < n) ? in[i] : 0.0f;" in src  # the scalar loop for the other blocks
    assert "each lane loads 4 consecutive elements per float4 load, 2 loads instead of 8" in \
        result.explanation
    assert "tested at run time on the address: the pointer may be an offset into an " \
           "allocation" in result.explanation
    assert "Float sums are added in another order" in result.explanation


def test_widths_follow_the_element_type_and_the_block():
    assert [coarsen_reduce.vector_width(b, 256) for b in (1, 2, 4, 8)] == [8, 8, 4, 2]
    assert coarsen_reduce.vector_width(4, 32) == 0  # one element per lane: nothing to group
    assert coarsen_reduce.vector_width(4, 64) == 2  # float2
    assert coarsen_reduce.vector_width(1, 512) == 16
    tags = {f: coarsen_reduce.apply(context(Variant("coarsen_reduce", CORPUS / f)),
                                    vector=True).tags[-1] for f in FILES}
    assert tags["double_explicit.cu"] == "vec2"  # double2
    assert tags["half_to_float_sum.cu"] == "vec8"  # 8 halves per int4
    assert tags["byte_flags_count.cu"] == "vec16"
    assert tags["define_max.cu"] == "vec4"
    with pytest.raises(PassNotApplicable) as err:
        coarsen_reduce.apply(context(Variant("coarsen_reduce", CORPUS / TWO_PER_THREAD)),
                             vector=True)
    assert str(err.value) == ("coarsen_reduce on block_min_select: vector loads: the read "
                              "'act[g]' (line 8) is not at blockIdx.x * 256 + threadIdx.x: not "
                              "one element per thread of a contiguous span")


def test_atomic_total_offers_the_vector_form_for_each_grid():
    ctx = context(Variant("coarsen_reduce", CORPUS / "atomic_total.cu"))
    space = coarsen_reduce.parameter_space(ctx)
    assert space[:3] == ({"blocks_per_sm": 32}, {"blocks_per_sm": 16}, {"blocks_per_sm": None})
    assert space[3:6] == tuple({**s, "vector": True} for s in space[:3])
    # then the grouped forms: one atomic per original block, after the loops' one per warp
    assert space[6:] == ({"blocks_per_sm": None, "warps_per_block": 8, "vector": True},
                         {"blocks_per_sm": None, "warps_per_block": 4, "vector": True},
                         {"blocks_per_sm": None, "warps_per_block": 8},
                         {"blocks_per_sm": None, "warps_per_block": 4})
    result = coarsen_reduce.apply(ctx, blocks_per_sm=32, vector=True)
    assert result.tags == ("warp-per-block+loop", "vec4", "grid=32*SMs")
    assert "bool whole = blockDim.x == 32 && reinterpret_cast<size_t>(&x[b * 256]) % 16 == 0;" \
        in result.source
    assert "int i = b * 256 + tid;" in result.source  # the looped block's number


@needs_nvcc
def test_every_vector_form_compiles_with_vector_loads():
    from concurrent.futures import ThreadPoolExecutor

    contexts = [_example("reduce_sum"), _example("reduce_max")] + \
        [context(Variant("coarsen_reduce", CORPUS / f)) for f in FILES]
    sources = [coarsen_reduce.apply(c, vector=True).source for c in contexts]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda s: compile_source(s, ptx=True), sources))
    for ctx, got in zip(contexts, results):
        assert got.ok, (ctx.kernel.name, got.stderr)
        assert re.search(r"ld\.global(\.nc)?\.v(4|2\.f64|4\.u32|4\.b32)", got.ptx), \
            ctx.kernel.name
        assert "ld.local" not in got.ptx, ctx.kernel.name  # the register array stays in registers


def _sizes(ctx) -> dict:
    # three full blocks of the largest block (512) and a ragged fourth
    return {ctx.spec.sizes[0].name: 3 * 512 + 77}


@block_sim.needs_gxx
@pytest.mark.parametrize("shift", [0, 1, 3])
@pytest.mark.parametrize("file", FILES + ["example:reduce_sum"])
def test_vector_form_computes_the_originals_outputs_at_any_offset(file, shift):
    ctx = _example("reduce_sum") if file.startswith("example:") else \
        context(Variant("coarsen_reduce", CORPUS / file))
    kernel = ctx.kernel.qualified_name
    result = coarsen_reduce.apply(ctx, vector=True)
    inputs = [d.name for d in ctx.spec.params if isinstance(d, BufferDecl) and d.role == "in"]
    moved = {name: shift for name in inputs}
    sizes = _sizes(ctx)
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes, shift=moved)
    after = block_sim.run(result.source, kernel, ctx.spec, sizes, result.launch, shift=moved)
    for name, values in before.buffers.items():
        got = after.buffers[name]
        if name in inputs:
            assert got == values, name
            continue
        assert len(got) == len(values)
        assert all(x == y or (isinstance(x, float) and
                              math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-5))
                   for x, y in zip(values, got)), (name, values[:8], got[:8])
    # under the original's launch nothing is touched out of range
    block_sim.run(result.source, kernel, ctx.spec, sizes, ctx.spec.launch, checked=True,
                  shift=moved)


@block_sim.needs_gxx
def test_the_alignment_check_catches_a_vector_load_off_16_bytes():
    """The misaligned runs above can fail: a float4 load that does not test the address
    stops the program when the pointer is moved by one float."""
    text = """
__global__ void k(const float* in, float* out, int n) {
    float4 q = *reinterpret_cast<const float4*>(&in[4 * threadIdx.x]);
    out[threadIdx.x] = q.x + q.y + q.z + q.w;
}"""
    spec = """
kernel k
size n = 8
scalar n: int = n
in in: float[4 * n]
out out: float[n]
block = 8
grid = 1
"""
    ctx = context_with_spec(text, "k", spec)
    block_sim.run(text, "k", ctx.spec, {"n": 8}, shift={"in": 4})  # 16 bytes: aligned
    with pytest.raises(AssertionError, match="misaligned"):
        block_sim.run(text, "k", ctx.spec, {"n": 8}, shift={"in": 1})


SPEC = """
kernel k
size n = 4096
scalar n: int = n
in x: float[n]
in y: float[n]
out out: float[ceil_div(n, 256)]
block = 256
grid = ceil_div(n, 256)
"""

TREE = """
    __syncthreads();
    for (int st = 128; st > 0; st >>= 1) {
        if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}"""

VECTOR_REJECTS = [
    ("""
__global__ void k(const float* x, const float* y, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] * y[i] : 0.0f;""" + TREE,
     "vector loads: the per-thread statements read x, y; the vector form loads one buffer",
     None),
    ("""
__global__ void k(const float* x, const float* y, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[2 * i] : 0.0f;""" + TREE,
     "vector loads: the read 'x[2 * i]' (line 5) is not at blockIdx.x * 256 + threadIdx.x: "
     "not one element per thread of a contiguous span", 5),
    ("""
__global__ void k(const float* x, const float* y, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = (i < n && n > 100) ? x[i] : 0.0f;""" + TREE,
     "vector loads: no read of x is reached whenever its bound holds (line 5): the original "
     "may skip elements", 5),
    ("""
__global__ void k(const float* x, const float* y, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = (i >= n) ? 0.0f : x[i];""" + TREE,
     "vector loads: 'x[i]' (line 5) is read when the condition fails", 5),
    ("""
__global__ void k(const float* x, const float* y, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = (i < n) ? __ldg(&x[i]) : 0.0f;""" + TREE,
     "vector loads: x is used as '&x[i]' (line 5), not read as x[index]", 5),
]


@pytest.mark.parametrize("text,reason,line", VECTOR_REJECTS)
def test_loads_other_than_one_guarded_span_keep_the_scalar_form_only(text, reason, line):
    ctx = context_with_spec(text, "k", SPEC)
    assert coarsen_reduce.check(ctx) is None  # the scalar form applies
    assert coarsen_reduce.parameter_space(ctx) == (  # the grouped forms, scalar
        {"blocks_per_sm": None, "warps_per_block": 8},
        {"blocks_per_sm": None, "warps_per_block": 4}, {"blocks_per_sm": None})
    why = coarsen_reduce._vector_plan(ctx, *coarsen_reduce._plan(ctx)[1:])[0]  # noqa: SLF001
    assert why == reason and line_of(why) == line
    with pytest.raises(PassNotApplicable, match="vector loads: "):
        coarsen_reduce.apply(ctx, vector=True)
