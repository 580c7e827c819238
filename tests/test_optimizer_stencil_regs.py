"""``stencil_regs``: several consecutive outputs per thread from a register window (one vector
load of the centre plus the halo). The plan offers it for the stencil example in the first
batch; nvcc compiles every rewrite with the vector load and no local memory; on the CPU
(``block_sim``) every output is bit for bit the original's at ragged sizes, with the input's
pointer aligned and moved off 16 bytes (built with the alignment check), under the new launch
and under the user's own (a drop-in); kernels outside the pattern are refused with the reason
and its line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable
from cudalens.optimizer.passes import stencil_regs
from cudalens.optimizer.plan import make_plan
from cudalens.optimizer.reasons import line_of
from cudalens.spec.model import BufferDecl

import block_sim
from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec
from variant_corpus import Variant, context

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ROOT / "tests" / "data" / "variants"
FILES = [f"stencil_regs/{p.name}" for p in sorted((VARIANTS / "stencil_regs").glob("*.cu"))] + \
    ["stencil_tile/conv1d_mask.cu", "stencil_tile/padded_input.cu",
     "stencil_tile/three_point_sizet.cu", "stencil_tile/unsigned_five_point.cu"]


def _example():
    from cudalens.optimizer.context import make_context
    from cudalens.target import load_target

    t = load_target(ROOT / "examples" / "stencil1d.cu")
    return make_context(t.text, str(t.path), t.kernel.qualified_name, t.spec)


def _ctx(file: str):
    if file == "example":
        return _example()
    folder, name = file.split("/")
    return context(Variant(folder, VARIANTS / folder / name))


def test_plan_offers_the_register_window_in_the_first_batch():
    plan = make_plan(_example())
    ours = {c.label: c for c in plan.candidates if "stencil_regs" in c.passes}
    assert "stencil-regs vec4" in ours
    # the family's representative (with the block and unrolling passes) is in the first batch
    assert any(c.first_batch for c in ours.values())
    assert "stencil-regs vec4 unroll block=512" in {c.label for c in plan.first_batch}
    assert "stencil_regs" not in {n.pass_name for n in plan.not_applied}
    tiles = [c for c in plan.candidates if "stencil_tile" in c.passes]
    assert tiles  # the shared-memory tile is still offered beside it


def test_example_rewrite_keeps_the_statements_once_and_loads_a_float4_window():
    ctx = _example()
    assert stencil_regs.check(ctx) is None and stencil_regs.parameter_space(ctx) == ({},)
    result = stencil_regs.apply(ctx)
    src = result.source
    assert result.tags == ("stencil-regs", "vec4")
    assert result.launch.block == ("256",)
    assert result.launch.grid == ("ceil_div(ceil_div(n, block.x), 4)",)
    assert "const int total = ((n + 256 - 1) / 256) * 256;  // the original's threads" in src
    assert "auto out_el = [](float* at, int k, unsigned& m, int s) -> float& { m |= 1u << s; " \
           "return at[k]; };" in src
    assert "auto one = [&](int i, const float* in_at, int in_k, float* out_at, int out_k, " \
           "unsigned& out_m, int slot) {" in src
    assert src.count("if (i < RADIUS || i >= n - RADIUS) {") == 1  # one copy of the statements
    assert "acc += w[r + RADIUS] * in_at[in_k + r];" in src
    assert "out_el(out_at, out_k, out_m, slot) = in_at[in_k];" in src
    assert "out_el(out_at, out_k, out_m, slot) = acc;" in src
    assert "out[i] =" not in src[src.index("__global__"):]  # every store through its slot
    assert "if (reinterpret_cast<size_t>(in) % 16 == 0 && i0 >= 3 && i0 + 6 < n) {" in src
    assert "const float4 in_v = *reinterpret_cast<const float4*>(&in[i0]);" in src
    assert "const float in_win[10] = {in[i0 - 3], in[i0 - 2], in[i0 - 1], in_v.x, in_v.y, " \
           "in_v.z, in_v.w, in[i0 + 4], in[i0 + 5], in[i0 + 6]};" in src
    assert "for (int j = 0; j < 4; ++j) one(i0 + j, in_win, j + 3, out_r, j, out_m, j);" in src
    assert "for (int j = 0; j < 4; ++j) one(i0 + j, in, i0 + j, out, i0 + j, out_m, j);" in src
    assert "long long" not in src  # the spec's sizes fit int
    assert "bit for bit the original's" in result.explanation
    assert "also correct under the user's launch" in result.explanation
    assert "4 results of out leave in one float4 store when all 4 outputs are stored and out " \
           "is aligned" in \
        result.explanation


def test_example_fast_path_stores_the_four_results_with_one_float4():
    src = stencil_regs.apply(_example()).source
    fast = src[src.index("if (reinterpret_cast<size_t>(in) % 16 == 0"):src.index("} else {\n"
                                                                                  "            unsigned")]
    lines = [l.strip() for l in fast.splitlines()]
    at = lines.index("float out_r[4];")
    assert lines[at:at + 9] == [
        "float out_r[4];",
        "unsigned out_m = 0u;",
        "#pragma unroll",
        "for (int j = 0; j < 4; ++j) one(i0 + j, in_win, j + 3, out_r, j, out_m, j);",
        # all four outputs stored (each took a branch that stores it) and out aligned too
        "if (out_m == 0xfu && reinterpret_cast<size_t>(out) % 16 == 0) {",
        "*reinterpret_cast<float4*>(&out[i0]) = float4{out_r[0], out_r[1], out_r[2], "
        "out_r[3]};",
        "} else {",
        "#pragma unroll",
        "for (int j = 0; j < 4; ++j) if (out_m >> j & 1u) out[i0 + j] = out_r[j];",
    ]
    assert fast.count("reinterpret_cast<float4*>") == 1


def test_double_and_int_outputs_get_their_own_vector_store():
    double = stencil_regs.apply(_ctx("stencil_regs/double_laplacian.cu")).source
    assert "if (lap_m == 0x3u && reinterpret_cast<size_t>(lap) % 16 == 0) {" in double
    assert "*reinterpret_cast<double2*>(&lap[i0]) = double2{lap_r[0], lap_r[1]};" in double
    ints = stencil_regs.apply(_ctx("stencil_regs/int_box_loop.cu")).source
    assert "*reinterpret_cast<int4*>(&sums[i0]) = int4{sums_r[0], sums_r[1], sums_r[2], " \
           "sums_r[3]};" in ints
    # a table read beside the window (the taps) does not stop the output's vector store
    fir = stencil_regs.apply(_ctx("stencil_regs/fir_taps_param.cu")).source
    assert "*reinterpret_cast<float4*>(&y[i0]) = float4{y_r[0], y_r[1], y_r[2], y_r[3]};" in fir


def test_an_output_also_read_keeps_its_scalar_stores():
    ctx = context_with_spec("""
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 1 || i >= n - 1) return;
    y[i] = x[i - 1] + x[i + 1];
    y[i] = y[i] * 0.5f;
}""", "k", SPEC.format(t="float"))
    src = stencil_regs.apply(ctx).source
    assert "reinterpret_cast<float4*>" not in src and "y_r" not in src
    assert "y[i] = y[i] * 0.5f;" in src


@needs_nvcc
def test_every_rewrite_compiles_with_a_vector_load_and_no_local_memory():
    from concurrent.futures import ThreadPoolExecutor

    files = ["example"] + FILES
    sources = [stencil_regs.apply(_ctx(f)).source for f in files]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda s: compile_source(s, ptx=True), sources))
    for f, got in zip(files, results):
        assert got.ok, (f, got.stderr)
        assert re.search(r"ld\.global(\.nc)?\.v(4|2\.f64)", got.ptx), f
        # the fast path's results leave in one vector store
        assert len(re.findall(r"st\.global\.v(4\.(f32|u32|s32|b32)|2\.f64)", got.ptx)) == 1, f
        assert not re.search(r"(ld|st)\.local", got.ptx), f  # the window stays in registers


def _run_both(ctx, sizes, shift, launch_of_rewrite=True):
    kernel = ctx.kernel.qualified_name
    result = stencil_regs.apply(ctx)
    moved = {d.name: shift for d in ctx.spec.params
             if isinstance(d, BufferDecl) and d.role == "in"}
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes, shift=moved)
    launch = result.launch if launch_of_rewrite else ctx.spec.launch
    after = block_sim.run(result.source, kernel, ctx.spec, sizes, launch, shift=moved)
    return before, after


@block_sim.needs_gxx
@pytest.mark.parametrize("shift", [0, 1])
@pytest.mark.parametrize("file", ["example"] + FILES)
def test_every_output_is_bit_for_bit_the_originals_at_any_offset(file, shift):
    ctx = _ctx(file)
    sizes = {ctx.spec.sizes[0].name: 1003}
    before, after = _run_both(ctx, sizes, shift)
    assert after.buffers == before.buffers  # the same reads in the same order per output
    out = next(d.name for d in ctx.spec.params if isinstance(d, BufferDecl) and d.role == "out")
    assert 77 not in before.buffers[out][:1003 - 8]


@block_sim.needs_gxx
@pytest.mark.parametrize("file", ["example"] + [f for f in FILES if f.startswith("stencil_regs/")])
def test_a_misaligned_output_at_a_ragged_size_gets_the_originals_values_in_range(file):
    # the input aligned (the window is used), the output one element off 16 bytes: the
    # vector store must give way to the scalar ones (the alignment sanitizer stops a
    # misaligned vector store); checked: every access inside the buffers
    ctx = _ctx(file)
    n = 1001
    sizes = {ctx.spec.sizes[0].name: n}
    bufs = [d for d in ctx.spec.params if isinstance(d, BufferDecl)]
    out = next(d.name for d in bufs if d.role == "out")
    moved = {out: 1}
    result = stencil_regs.apply(ctx)
    kernel = ctx.kernel.qualified_name
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes, checked=True, shift=moved)
    after = block_sim.run(result.source, kernel, ctx.spec, sizes, result.launch, checked=True,
                          shift=moved)
    assert after.buffers == before.buffers
    assert 77 not in before.buffers[out][:n - 8]  # the original writes the outputs compared


@block_sim.needs_gxx
def test_outputs_the_original_skips_stay_untouched_beside_the_vector_store():
    # y[i] is stored only where x[i] > 0.5: a chunk with a skipped output must not store its
    # slot (nor the whole vector); the others are stored one by one
    spec = SPEC.format(t="float").replace("in x: float[n]", "in x: float[n] range(0, 1)")
    ctx = context_with_spec("""
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 1 || i >= n - 1) return;
    if (x[i] > 0.5f) y[i] = x[i - 1] + x[i + 1];
}""", "k", spec)
    result = stencil_regs.apply(ctx)
    assert "*reinterpret_cast<float4*>(&y[i0]) = float4{y_r[0], y_r[1], y_r[2], y_r[3]};" in \
        result.source
    sizes = {"n": 1003}
    before = block_sim.run(ctx.text, "k", ctx.spec, sizes, checked=True)
    after = block_sim.run(result.source, "k", ctx.spec, sizes, result.launch, checked=True)
    assert after.buffers == before.buffers
    skipped = before.buffers["y"][1:1002].count(77)
    assert 0 < skipped < 1001  # some outputs stored, some left as they were


@block_sim.needs_gxx
@pytest.mark.parametrize("file", ["example", "stencil_regs/double_laplacian.cu"])
def test_the_users_launch_computes_the_same_outputs_and_stays_in_range(file):
    ctx = _ctx(file)
    sizes = {ctx.spec.sizes[0].name: 515}
    before, after = _run_both(ctx, sizes, 0, launch_of_rewrite=False)
    assert after.buffers == before.buffers  # a drop-in: the extra threads do nothing
    result = stencil_regs.apply(ctx)
    block_sim.run(result.source, ctx.kernel.qualified_name, ctx.spec, sizes, ctx.spec.launch,
                  checked=True, shift={ctx.kernel.parameters[0].name: 2})


SPEC = """
kernel k
size n = 4096
scalar n: int = n
in x: {t}[n]
out y: {t}[n]
block = 256
grid = ceil_div(n, block.x)
"""

REJECTS = [
    ("""
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 1 || i >= n - 1) return;
    y[i] = x[i - 1] + x[i + 1] + (threadIdx.x == 0 ? 1.0f : 0.0f);
}""", "float", "the statements after the index use threadIdx (line 5): each thread now "
                "computes several outputs", 5),
    ("""
__global__ void k(const __half* x, __half* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 1 || i >= n - 1) return;
    y[i] = x[i - 1] + x[i + 1];
}""", "half", "x holds __half; the window is loaded with float4, double2, int4 or uint4", None),
    ("""
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = x[min(i + 1, n - 1)] + x[max(i - 1, 0)];
}""", "float", "every read of x is at an index clamped with min/max: a register window would "
                "serve none of them", None),
    ("""
__global__ void k(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 9 || i >= n - 9) return;
    y[i] = x[i - 9] + x[i + 9];
}""", "float", "the reads of x reach 9 elements from i; the register window holds halos of at "
                "most 8", None),
]


@pytest.mark.parametrize("text,t,reason,line", REJECTS)
def test_kernels_outside_the_pattern_are_refused_with_the_reason(text, t, reason, line):
    ctx = context_with_spec(text, "k", SPEC.format(t=t))
    got = stencil_regs.check(ctx)
    assert got == reason and line_of(got) == line
    with pytest.raises(PassNotApplicable, match=re.escape(reason[:40])):
        stencil_regs.apply(ctx)
