"""The deeper reduction passes (issue 14): ``hist_privatize``, ``coarsen_reduce`` and
``column_reduce``. The variant corpus (``test_variant_corpus.py``) checks that each fires on
five spellings, compiles and computes the original's outputs at its default parameters; here:
the examples get them in the plan's first batch with their explanations, the parameters other
than the default compute the same outputs on the CPU, and kernels outside a pattern are
refused with the reason and the line of the failing condition."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable
from cudalens.optimizer.passes import coarsen_reduce, column_reduce, hist_privatize
from cudalens.optimizer.plan import make_plan
from cudalens.optimizer.reasons import line_of
from cudalens.spec.model import BufferDecl

import block_sim
from optimizer_fixtures import context_with_spec
from variant_corpus import Variant, context, sim_sizes

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ROOT / "tests" / "data" / "variants"


def _example(name: str):
    from cudalens.optimizer.context import make_context
    from cudalens.target import load_target

    t = load_target(ROOT / "examples" / f"{name}.cu")
    return make_context(t.text, str(t.path), t.kernel.qualified_name, t.spec)


@pytest.mark.parametrize("example,pass_name,words", [
    ("histogram", "hist_privatize", "private copy of the 256 bins in shared memory"),
    ("reduce_sum", "coarsen_reduce", "each lane combining 8 coalesced loads"),
    ("reduce_max", "coarsen_reduce", "each lane combining 16 coalesced loads"),
    ("colsum", "column_reduce", "8 threads per column each sum every 8th row"),
])
def test_examples_get_the_pass_in_the_first_batch(example, pass_name, words):
    ctx = _example(example)
    plan = make_plan(ctx)
    firsts = [c for c in plan.first_batch if pass_name in c.passes]
    assert firsts, [(n.pass_name, n.reason) for n in plan.not_applied]
    from cudalens.optimizer.passes import get

    result = get(pass_name).apply(ctx)
    assert words in result.explanation
    # float sums reorder: the explanation says so; max and integer counts do not
    assert ("another order" in result.explanation) == (example in ("reduce_sum", "colsum"))


def test_histogram_rewrite_keeps_the_users_statements_and_names():
    result = hist_privatize.apply(_example("histogram"))
    assert "atomicAdd(&s_bins[values[i]], 1u);" in result.source
    assert "if (s_bins[b] != 0) atomicAdd(&bins[b], s_bins[b]);" in result.source
    assert result.launch.grid == ("min(ceil_div(n, block.x), sm_count * 8)",)
    assert result.launch.block == ("256",)


def test_coarsened_reduction_keeps_the_grid_with_one_warp_per_block():
    result = coarsen_reduce.apply(_example("reduce_sum"))
    assert result.launch.block == ("32",)
    assert result.launch.grid == ("ceil_div(n, 256)",)
    assert "    #pragma unroll\n    for (int k = 0; k < 8; ++k) {\n" \
           "        unsigned int tid = threadIdx.x + k * 32;\n" in result.source
    assert "__syncthreads" not in result.source and "__shared__" not in result.source


def _outputs_match(v: Variant, params: dict, rel: float = 1e-5) -> None:
    from cudalens.optimizer.passes import get

    ctx = context(v)
    sizes = sim_sizes(v, ctx)
    result = get(v.pass_name).apply(ctx, **params)
    kernel = ctx.kernel.qualified_name
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes)
    after = block_sim.run(result.source, kernel, ctx.spec, sizes, result.launch)
    outs = {d.name for d in ctx.spec.params if isinstance(d, BufferDecl) and d.role != "in"}
    for name, values in before.buffers.items():
        got = after.buffers[name]
        if name in outs:
            assert all(x == y or math.isclose(x, y, rel_tol=rel, abs_tol=rel)
                       for x, y in zip(values, got)), name
            assert len(values) == len(got)
        else:
            assert got == values, name


@block_sim.needs_gxx
@pytest.mark.parametrize("file,params", [
    ("hist_privatize/bytes_sizet.cu", {"per_warp": True, "blocks_per_sm": 8, "vector": 1}),
    ("hist_privatize/bytes_sizet.cu", {"per_warp": True, "blocks_per_sm": 16, "vector": 16}),
    ("hist_privatize/early_return_ptr.cu", {"per_warp": True, "blocks_per_sm": 16}),
    ("hist_privatize/weighted_float.cu", {"per_warp": False, "blocks_per_sm": 32}),
    ("column_reduce/max_abs.cu", {"tile": (16, 32)}),
    ("column_reduce/early_return_mean.cu", {"tile": (8, 32)}),
])
def test_other_parameters_compute_the_originals_outputs_on_cpu(file, params):
    folder, name = file.split("/")
    _outputs_match(Variant(folder, VARIANTS / folder / name), params)


HIST_SPEC = """
kernel k
size n = 4096
scalar n: int = n
in x: int32[n] range(0, 256)
inout h: uint32[256] range(0, 1)
out y: int32[n]
block = 256
grid = ceil_div(n, block.x)
atomics
"""

HIST_REJECTS = [
    ("""
__global__ void k(const int* x, unsigned int* h, int* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (h[0] < 100u) atomicAdd(&h[x[i]], 1u);
    }
}""", "h is also used outside atomicAdd ('h[0]' at line 5); a private copy would miss that", 5),
    ("""
__global__ void k(const int* x, unsigned int* h, int* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&h[x[i]], 1u);
        y[i] = 1;
    }
}""", "writes through y ('y[i]' at line 6); the pass handles kernels whose only writes are the "
      "histogram's atomics", 6),
    ("""
__global__ void k(const int* x, unsigned int* h, int* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&h[x[i]], 1u + threadIdx.x % 2);
    }
}""", "the per-element statements use threadIdx at line 5: they depend on which thread runs "
      "them", 5),
    ("""
__global__ void k(const int* x, unsigned int* h, int* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicMax(&h[0], x[i]);
    }
}""", "no atomicAdd(&bins[k], v) on a pointer parameter in the guarded body (not a "
      "global-atomics histogram)", 5),
]


@pytest.mark.parametrize("text,reason,line", HIST_REJECTS)
def test_histogram_pass_refuses_what_a_private_copy_would_change(text, reason, line):
    got = hist_privatize.check(context_with_spec(text, "k", HIST_SPEC))
    assert got == reason and line_of(got) == line


def test_histogram_bins_must_fit_shared_memory():
    text = """
__global__ void k(const int* x, unsigned int* h, int* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&h[x[i]], 1u);
}"""
    spec = HIST_SPEC.replace("uint32[256]", "uint32[20000]")
    ctx = context_with_spec(text, "k", spec)
    assert hist_privatize.check(ctx) == (
        "h has 20000 bins of 4 bytes (80000 bytes), more than the 49152 bytes of static shared "
        "memory a block has")
    with pytest.raises(PassNotApplicable, match="hist_privatize on k: h has 20000 bins"):
        hist_privatize.apply(ctx)


def test_histogram_vector_form_comes_first_with_int4_loads_and_the_alignment_test():
    ctx = _example("histogram")
    space = hist_privatize.parameter_space(ctx)
    assert space[:2] == ({"per_warp": False, "blocks_per_sm": 8, "vector": 4},
                         {"per_warp": False, "blocks_per_sm": 4, "vector": 4})
    assert [s["vector"] for s in space] == [4] * 6 + [1] * 6
    result = hist_privatize.apply(ctx, **space[0])
    src = result.source
    assert "    if (reinterpret_cast<size_t>(values) % 16 == 0) {\n" \
           "        for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < (n) / 4; " \
           "q += gridDim.x * blockDim.x) {\n" \
           "            alignas(16) int elems[4];\n" \
           "            *reinterpret_cast<int4*>(elems) = " \
           "reinterpret_cast<const int4*>(values)[q];\n" in src
    assert "            for (int j = 0; j < 4; ++j) {\n" \
           "                atomicAdd(&s_bins[elems[j]], 1u);\n" in src
    # the ragged tail, then the misaligned pointer's loop, both with the user's statement
    assert "        for (int i = (n) / 4 * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; " \
           "i += gridDim.x * blockDim.x) {\n            atomicAdd(&s_bins[values[i]], 1u);\n" \
           in src
    assert "    } else {\n        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; " \
           "i += gridDim.x * blockDim.x) {\n            atomicAdd(&s_bins[values[i]], 1u);\n" \
           in src
    assert src.count("atomicAdd(&s_bins[values[i]], 1u);") == 2
    assert result.tags == ("hist-privatize", "grid=8*SMs", "vec4")
    assert "loads 4 elements of values at a time (int4)" in result.explanation
    # the default is the vector form; vector=1 the scalar loop alone
    assert hist_privatize.apply(ctx).source == src
    scalar = hist_privatize.apply(ctx, vector=1).source
    assert "int4" not in scalar and "reinterpret_cast" not in scalar


def test_histogram_vector_form_of_bytes_loads_sixteen_and_keeps_the_bin_expression():
    ctx = context(Variant("hist_privatize", VARIANTS / "hist_privatize" / "image_bins_uint.cu"))
    assert hist_privatize.parameter_space(ctx)[0] == {"per_warp": False, "blocks_per_sm": 8,
                                                     "vector": 16}
    src = hist_privatize.apply(ctx).source
    assert "alignas(16) unsigned char elems[16];" in src
    assert "*reinterpret_cast<int4*>(elems) = reinterpret_cast<const int4*>(pixels)[q];" in src
    assert "for (unsigned int q = blockIdx.x * blockDim.x + threadIdx.x; q < (num_pixels) / 16;" \
           in src
    assert "                const unsigned int bin = elems[j] % NUM_BINS;\n" \
           "                atomicAdd(&s_histo[bin], 1);\n" in src
    # the index is not used but by the replaced read: no per-lane copy of it
    assert "unsigned int tid = q * 16 + j;" not in src
    with pytest.raises(ValueError, match="vector is 1 or 16 for pixels, not 4"):
        hist_privatize.apply(ctx, vector=4)


def test_histogram_vector_form_declares_the_index_where_the_statements_use_it():
    text = """
__global__ void k(const int* x, unsigned int* h, int* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&h[(x[i] + i) % 256], 1u);
}"""
    src = hist_privatize.apply(context_with_spec(text, "k", HIST_SPEC)).source
    assert "                int i = q * 4 + j;\n" \
           "                atomicAdd(&s_h[(elems[j] + i) % 256], 1u);\n" in src


def test_histogram_vector_form_needs_one_input_read_at_the_index():
    v = Variant("hist_privatize", VARIANTS / "hist_privatize" / "weighted_float.cu")
    ctx = context(v)
    assert all(s["vector"] == 1 for s in hist_privatize.parameter_space(ctx))
    with pytest.raises(PassNotApplicable, match="hist_privatize on weighted_hist: vector loads: "
                                                "the per-thread statements read label, weight; "
                                                "the vector form loads one buffer"):
        hist_privatize.apply(ctx, vector=4)
    assert "int4" not in hist_privatize.apply(ctx).source
    shifted = """
__global__ void k(const int* x, unsigned int* h, int* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 1) atomicAdd(&h[x[i + 1]], 1u);
}"""
    with pytest.raises(PassNotApplicable, match=r"vector loads: the read 'x\[i \+ 1\]' \(line 4\) "
                                                r"is not at blockIdx.x \* 256 \+ threadIdx.x"):
        hist_privatize.apply(context_with_spec(shifted, "k", HIST_SPEC), vector=4)


VECTOR_HISTS = ["example:histogram", "hist_privatize/bytes_sizet.cu",
                "hist_privatize/image_bins_uint.cu", "hist_privatize/early_return_ptr.cu",
                "hist_privatize/shift_bins_int.cu"]


def _hist_case(file: str):
    """(context, sizes with the element count 1003: not a multiple of 4 or 16)."""
    if file.startswith("example:"):
        ctx = _example(file.split(":")[1])
        return ctx, {"n": 1003, "nbins": 256}
    folder, name = file.split("/")
    v = Variant(folder, VARIANTS / folder / name)
    ctx = context(v)
    sizes = sim_sizes(v, ctx)
    return ctx, {**sizes, ctx.spec.sizes[0].name: 1003}


def _input(ctx) -> str:
    [name] = [d.name for d in ctx.spec.params if isinstance(d, BufferDecl) and d.role == "in"]
    return name


@block_sim.needs_gxx
@pytest.mark.parametrize("shift", [0, 1, 3])
@pytest.mark.parametrize("file", VECTOR_HISTS)
def test_histogram_vector_form_counts_the_originals_bins_at_any_offset(file, shift):
    """A ragged count and the input's pointer moved off 16 bytes by ``shift`` elements (the
    program built with the alignment check: an int4 load at a misaligned address fails)."""
    ctx, sizes = _hist_case(file)
    kernel = ctx.kernel.qualified_name
    result = hist_privatize.apply(ctx)
    assert "int4" in result.source
    moved = {_input(ctx): shift}
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes, shift=moved)
    after = block_sim.run(result.source, kernel, ctx.spec, sizes, result.launch, shift=moved)
    assert after.buffers == before.buffers
    [out] = [d.name for d in ctx.spec.params if isinstance(d, BufferDecl) and d.role != "in"]
    assert sum(before.buffers[out][:-block_sim.GUARD]) == 1003  # every element counted once
    block_sim.run(result.source, kernel, ctx.spec, sizes, ctx.spec.launch, checked=True,
                  shift=moved)


@block_sim.needs_gxx
def test_histogram_vector_loop_and_tail_alone_count_every_element():
    """With the alignment test forced true, the vector loop and the tail alone give the
    original's bins on an aligned input (so the aligned runs above took them), and an input
    moved by one element stops the program at the misaligned int4 load: the test is what
    keeps the offset runs correct."""
    ctx, sizes = _hist_case("example:histogram")
    result = hist_privatize.apply(ctx)
    test = "if (reinterpret_cast<size_t>(values) % 16 == 0) {"
    assert result.source.count(test) == 1
    forced = result.source.replace(test, "if (true) {")
    before = block_sim.run(ctx.text, "histogram", ctx.spec, sizes)
    after = block_sim.run(forced, "histogram", ctx.spec, sizes, result.launch)
    assert after.buffers == before.buffers
    block_sim.run(forced, "histogram", ctx.spec, sizes, result.launch, shift={"values": 4})
    with pytest.raises(AssertionError, match="misaligned"):
        block_sim.run(forced, "histogram", ctx.spec, sizes, result.launch, shift={"values": 1})


@block_sim.needs_gxx
@pytest.mark.parametrize("shift", [0, 1])
def test_handwritten_histogram_tests_the_alignment(shift):
    ctx, sizes = _hist_case("example:histogram")
    hand = (ROOT / "benchmarks" / "handwritten" / "histogram.hist_privatize.cu").read_text()
    launch = hist_privatize.apply(ctx).launch
    before = block_sim.run(ctx.text, "histogram", ctx.spec, sizes, shift={"values": shift})
    after = block_sim.run(hand, "histogram", ctx.spec, sizes, launch, shift={"values": shift})
    assert after.buffers == before.buffers


REDUCE_SPEC = """
kernel k
size n = 4096
scalar n: int = n
in x: {t}[n]
out out: {t}[ceil_div(n, 256)]
block = 256
grid = ceil_div(n, 256)
"""


def test_coarsened_reduction_refuses_an_integer_max_without_identity():
    text = """
__global__ void k(const int* x, int* out, int n) {
    __shared__ int s[256];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? x[i] : 0;
    __syncthreads();
    for (unsigned int st = blockDim.x / 2; st > 0; st >>= 1) {
        if (tid < st) s[tid] = max(s[tid], s[tid + st]);
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}"""
    got = coarsen_reduce.check(context_with_spec(text, "k", REDUCE_SPEC.format(t="int32")))
    assert got == ("the combine max on int has no identity the pass can write (sums, and "
                   "max/min of floats, do)")


def test_coarsened_reduction_refuses_a_final_statement_using_a_thread_local():
    text = """
__global__ void k(const float* x, float* out, int n) {
    __shared__ float s[256];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned int st = blockDim.x / 2; st > 0; st >>= 1) {
        if (tid < st) s[tid] += s[tid + st];
        __syncthreads();
    }
    if (tid == 0) out[i / 256] = s[0];
}"""
    got = coarsen_reduce.check(context_with_spec(text, "k", REDUCE_SPEC.format(t="float")))
    assert got == ("the final statement uses i (line 12), a local of the per-thread statements")
    assert line_of(got) == 12


COL_SPEC = """
kernel k
size rows = 64
size cols = 48
scalar rows: int = rows
scalar cols: int = cols
in a: float[rows * cols]
out out: float[cols]
block = 128
grid = ceil_div(cols, block.x)
"""


@pytest.mark.parametrize("text,reason,line", [
    # column-major: each thread reads a contiguous run, neighbouring threads are rows apart
    ("""
__global__ void k(const float* a, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 0.0f;
        for (int r = 0; r < rows; ++r) s += a[c * rows + r];
        out[c] = s;
    }
}""", "'a[c * rows + r]' (line 6) does not move by one element with c (nor stays): "
      "neighbouring threads do not read neighbouring addresses (a thread reading a contiguous "
      "run is warp_per_row's pattern)", 6),
    ("""
__global__ void k(const float* a, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 1.0f;
        for (int r = 0; r < rows; ++r) s += a[r * cols + c];
        out[c] = s;
    }
}""", "the accumulator starts at '1.0f' (line 5), not the identity of the combine (0)", 5),
    ("""
__global__ void k(const float* a, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 0.0f;
        for (int r = 1; r < rows; ++r) s += a[r * cols + c];
        out[c] = s;
    }
}""", "the loop at line 6 is not 'for (... r = 0; r < rows; ++r)'", 6),
])
def test_column_pass_refuses_other_layouts_and_accumulators(text, reason, line):
    got = column_reduce.check(context_with_spec(text, "k", COL_SPEC))
    assert got == reason and line_of(got) == line


def test_atomic_total_loops_over_the_original_blocks():
    v = Variant("coarsen_reduce", VARIANTS / "coarsen_reduce" / "atomic_total.cu")
    ctx = context(v)
    assert coarsen_reduce.parameter_space(ctx)[:3] == (  # then each again with vector=True
        {"blocks_per_sm": 32}, {"blocks_per_sm": 16}, {"blocks_per_sm": None})
    result = coarsen_reduce.apply(ctx, blocks_per_sm=32)
    assert "const unsigned int blocks = (n + 256 - 1) / 256;  // the original grid" in \
        result.source
    assert result.launch.grid == ("min(ceil_div(n, 256), sm_count * 32)",)
    assert "one atomicAdd, instead of one atomicAdd on the same address per original block" \
        in result.explanation
    # per-block partials have no such form
    assert {"blocks_per_sm": 32} not in coarsen_reduce.parameter_space(_example("reduce_sum"))
    with pytest.raises(PassNotApplicable, match="needs one total added with atomicAdd"):
        coarsen_reduce.apply(_example("reduce_sum"), blocks_per_sm=32)


@block_sim.needs_gxx
def test_atomic_total_loop_adds_every_block_once_on_cpu():
    import dataclasses

    v = Variant("coarsen_reduce", VARIANTS / "coarsen_reduce" / "atomic_total.cu")
    ctx = context(v)
    sizes = {"n": 2000}  # 8 original blocks of 256, the last one ragged
    result = coarsen_reduce.apply(ctx, blocks_per_sm=32)
    # 3 one-warp blocks: each loops over 2 or 3 of the 8 original blocks
    launch = dataclasses.replace(result.launch, grid=("min(ceil_div(n, 256), 3)",))
    before = block_sim.run(ctx.text, "total_sum", ctx.spec, sizes)
    after = block_sim.run(result.source, "total_sum", ctx.spec, sizes, launch)
    assert math.isclose(before.buffers["total"][0], after.buffers["total"][0], rel_tol=1e-5)
    assert after.buffers["x"] == before.buffers["x"]
    assert after.buffers["total"][1:] == before.buffers["total"][1:]  # guards untouched


def test_column_tiles_name_their_row_step_as_an_english_ordinal():
    from cudalens.optimizer.passes import column_reduce  # noqa: PLC0415

    got = [column_reduce._ordinal(n) for n in (1, 2, 3, 4, 8, 11, 12, 13, 21, 32, 112)]  # noqa: SLF001
    assert got == ["1st", "2nd", "3rd", "4th", "8th", "11th", "12th", "13th", "21st", "32nd",
                   "112th"]
    plan = make_plan(_example("colsum"))
    words = [c.explanation for c in plan.candidates if "col-tile tile=16x32" in c.label]
    assert words and "32 threads per column each sum every 32nd row" in words[0]


def test_column_max_written_as_a_comparison_is_planned_and_compiles():
    """``if (x > m) m = x;`` in the row loop (``cudalens.optimizer.minmax``): the plan's first
    batch tiles the columns, the row groups are combined with the same comparison, and every
    tile's rewrite compiles with nvcc."""
    from nvcc_util import compile_source, nvcc_path

    v = Variant("column_reduce", VARIANTS / "column_reduce" / "max_if_compare.cu")
    ctx = context(v)
    plan = make_plan(ctx)
    assert "column_reduce" not in {n.pass_name for n in plan.not_applied}
    assert any("column_reduce" in c.passes for c in plan.first_batch)
    result = column_reduce.apply(ctx)
    assert ("if (threadIdx.y < s) { if (part[threadIdx.y + s][threadIdx.x] > "
            "part[threadIdx.y][threadIdx.x]) part[threadIdx.y][threadIdx.x] = "
            "part[threadIdx.y + s][threadIdx.x]; }") in result.source
    assert "each max (if (x > m) m = x) every 8th row" in result.explanation
    assert "which the rewrite changes" in result.explanation  # the NaN caveat
    if nvcc_path() is None:
        pytest.skip("nvcc (CUDA toolkit) not found")
    for params in column_reduce.parameter_space(ctx):
        got = compile_source(column_reduce.apply(ctx, **params).source)
        assert got.ok, (params, got.stderr[:600])


@pytest.mark.parametrize("body,kind", [
    ("if (a[r * cols + c] > s) s = a[r * cols + c];", "if>"),
    ("s = a[r * cols + c] > s ? a[r * cols + c] : s;", "if>"),
    ("s = (s < a[r * cols + c]) ? a[r * cols + c] : s;", "if>"),
    ("s = (s > a[r * cols + c]) ? s : a[r * cols + c];", "keep<"),
])
def test_column_pass_reads_a_max_written_as_a_comparison(body, kind):
    text = f"""
__global__ void k(const float* a, float* out, int rows, int cols) {{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {{
        float s = -INFINITY;
        for (int r = 0; r < rows; ++r) {body}
        out[c] = s;
    }}
}}"""
    ctx = context_with_spec(text, "k", COL_SPEC)
    assert column_reduce.check(ctx) is None
    assert column_reduce.match(ctx).combine == kind


def test_column_pass_refuses_a_comparison_max_from_the_wrong_start():
    text = """
__global__ void k(const float* a, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 0.0f;
        for (int r = 0; r < rows; ++r) if (a[r * cols + c] > s) s = a[r * cols + c];
        out[c] = s;
    }
}"""
    got = column_reduce.check(context_with_spec(text, "k", COL_SPEC))
    assert got == ("the accumulator starts at '0.0f' (line 5), not the identity of the combine "
                   "(-INFINITY)") and line_of(got) == 5
