"""``cudalens plan`` and its model (``cudalens.optimizer.plan``), and the plan on the kernel's
hover: the candidates in the search's order, the first batch the batched search sends before
any measurement, and the passes that do not apply with their reasons and lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from lsprotocol import types

from cudalens.cli import main
from cudalens.lsp.documents import analyze
from cudalens.lsp.hover import hover
from cudalens.lsp.plan_hover import PENDING, plan_future, plan_markdown, with_plan
from cudalens.lsp.results import KernelStatus
from cudalens.optimizer.batched import Budget, Scored, run
from cudalens.optimizer.context import make_context
from cudalens.optimizer.plan import make_plan, parameters_of
from cudalens.optimizer.reasons import Reason, line_of
from cudalens.optimizer.staged_search import ordered
from cudalens.target import load_target

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _ctx(name: str):
    target = load_target(EXAMPLES / name)
    return make_context(target.text, str(target.path), target.kernel.name, target.spec)


def test_candidates_are_the_search_pool_in_order():
    ctx = _ctx("transpose.cu")
    plan = make_plan(ctx)
    pool = ordered(ctx, 0)
    assert [c.label for c in plan.candidates] == [c.label for c in pool]
    assert [c.passes for c in plan.candidates] == [c.passes for c in pool]
    first = plan.candidates[0]
    assert first.label == "restrict tiled-transpose block=32x8"
    assert first.passes == ("restrict_const", "tiled_transpose")
    assert first.parameters == {"block": "32x8"}
    assert (first.launch.block, first.launch.grid) == (
        ("32", "8"), ("ceil_div(cols, 32)", "ceil_div(rows, 32)"))


def test_first_batch_is_what_the_search_sends_before_measuring():
    ctx = _ctx("transpose.cu")
    plan = make_plan(ctx, batch=8)
    sent = []

    def evaluate(cands):
        sent.append([c.label for c in cands])
        return [Scored(c, 1.0 + i / 10) for i, c in enumerate(cands)]

    run(ordered(ctx, 0), evaluate, budget=Budget(candidates=24, batch=8))
    assert [c.label for c in plan.first_batch] == sent[0]
    assert [c.label for c in plan.first_batch] == [
        "restrict tiled-transpose block=32x8", "tiled-transpose block=32x8",
        "restrict block=16x16", "block=16x16",  # every family's representative, then
        "restrict tiled-transpose block=32x16",  # with nothing measured, the first family's
        "restrict tiled-transpose block=32x32", "restrict tiled-transpose block=32x4",
        "tiled-transpose block=32x32"]
    assert plan.notes[0] == ("the first batch (8 of 19 candidates, 8 per runner call) is fixed "
                             "before anything is measured; later batches follow the measured "
                             "speedups")
    assert len(make_plan(ctx, batch=3).first_batch) == 3


def test_not_applied_names_the_line_of_the_failing_condition():
    plan = make_plan(_ctx("reduce_sum.cu"))
    by_pass = {n.pass_name: n for n in plan.not_applied}
    assert "warp_reduce" not in by_pass  # it applies
    tt = by_pass["tiled_transpose"]
    assert (tt.line, tt.at_kernel) == (9, False)
    assert tt.reason.startswith("expected the body to start with the two global indices")
    assert tt.reason.endswith("found '__shared__ float s[BLOCK];' at line 9")
    unroll = by_pass["unroll"]  # about the kernel as a whole: its first line, so marked
    assert (unroll.line, unroll.at_kernel) == (7, True)
    assert unroll.reason == ("no loop to unroll: line 14 holds a barrier (its trips are the "
                             "block's phases)")
    st = by_pass["stencil_tile"]
    assert (st.line, st.at_kernel) == (9, False)
    assert st.reason.startswith("expected the body to start with 'int i = blockIdx.x")
    assert by_pass["block_per_row"].reason == by_pass["warp_per_row"].reason  # same recognizer
    assert set(by_pass) == {"tiled_transpose", "tiled_matmul", "block_per_row", "warp_per_row",
                            "stencil_tile", "stencil_regs", "stencil2d_regs",
                            "vectorize_gridstride", "gridstride", "unroll", "fast_math",
                            "launch_config", "regblock_matmul", "vectorize_2d",
                            "hist_privatize", "column_reduce"}


def test_reason_is_a_string_with_a_line():
    r = Reason("the words", 12)
    assert r == "the words" and isinstance(r, str) and line_of(r) == 12
    assert line_of("plain") is None and line_of(None) is None
    assert parameters_of("restrict vec4+gridstride block=512 grid=8*SMs") == {
        "block": "512", "grid": "8*SMs"}


def test_cli_prints_the_plan_and_writes_json(tmp_path):
    src = tmp_path / "reduce_sum.cu"
    shutil.copy(EXAMPLES / "reduce_sum.cu", src)
    shutil.copy(EXAMPLES / "reduce_sum.cu.spec", tmp_path / "reduce_sum.cu.spec")
    out = tmp_path / "plan.json"
    res = CliRunner().invoke(main, ["plan", str(src), "--json", str(out)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == (f"plan for block_sum in {src} (no GPU used): 15 candidate(s), 8 per "
                        f"runner call")
    assert lines[1].startswith(" *  1. restrict warp-reduce") and \
        "passes: restrict_const, warp_reduce;  block (256), grid (ceil_div(n, 256))" in lines[1]
    assert lines[2].startswith("        why: __restrict__ on ")  # the passes' explanation
    # coarsen_reduce's grouped form (8 warps per block) comes next in the first batch
    assert lines[3].startswith(" *  2. restrict warp-per-block warps=8 vec4") and \
        "block (256), grid (ceil_div(ceil_div(n, 256), 8))" in lines[3]
    assert ("  * = the first batch (8 candidates), sent before anything is measured; later "
            "batches depend on the measurements") in lines
    assert f"  unroll                {src}:7 (the kernel): no loop to unroll: line 14 holds a " \
           f"barrier (its trips are the block's phases)" in lines
    data = json.loads(out.read_text())
    assert set(data) == {"kernel", "candidates", "not_applied", "batch", "notes"}
    assert data["kernel"] == "block_sum"
    assert data["candidates"][0]["passes"] == ["restrict_const", "warp_reduce"]
    assert "warp" in data["candidates"][0]["explanation"]
    assert data["candidates"][0]["launch"] == {"block": ["256"], "grid": ["ceil_div(n, 256)"],
                                               "shared": "0"}
    assert {"pass": "tiled_transpose", "line": 9, "at": "condition"}.items() <= \
        data["not_applied"][0].items()


def test_cli_errors_exit_2(tmp_path):
    res = CliRunner().invoke(main, ["plan", str(EXAMPLES / "saxpy.cu"), "--kernel", "nope"])
    assert res.exit_code == 2 and "nope" in res.output
    spec = EXAMPLES / "saxpy.cu.spec"
    res = CliRunner().invoke(main, ["plan", str(EXAMPLES / "saxpy.cu"), "--json", str(spec)])
    assert res.exit_code == 2
    assert "it is the kernel's source or spec file" in res.output


def test_hover_on_the_signature_appends_the_plan_once_built():
    target = load_target(EXAMPLES / "reduce_sum.cu")
    text = target.text + "\n// this test's own version of the file\n"
    snap = analyze("file:///w/reduce_sum.cu", target.path, 1, text, "utf-16")
    statuses = [KernelStatus(view=v, key="", current=None, stale=None, offer=None)
                for v in snap.kernels]
    pos = types.Position(6, 18)  # on the name block_sum
    base = hover(snap, statuses, pos, None)
    first = with_plan(base, snap, statuses, pos)  # starts the plan, does not wait for it
    assert first.range == base.range
    assert first.contents.value in (base.contents.value + "\n\n" + PENDING,
                                    base.contents.value + "\n\n" + plan_markdown(
                                        plan_future(snap, snap.kernels[0]).result()))
    plan = plan_future(snap, snap.kernels[0]).result(timeout=60)
    got = with_plan(base, snap, statuses, pos)
    assert got.contents.value == base.contents.value + "\n\n" + plan_markdown(plan)
    section = plan_markdown(plan)
    assert [c.label for c in plan.candidates] == \
        [c.label for c in make_plan(_ctx("reduce_sum.cu")).candidates]
    assert section.splitlines()[1] == "- `restrict warp-reduce` \u2605: restrict_const, warp_reduce"
    assert "- `unroll` (line 7, the kernel): no loop to unroll" in section
    assert "- `tiled_transpose` (line 9): expected the body to start" in section
    # off the signature: no hover, no plan
    assert with_plan(None, snap, statuses, types.Position(12, 4)) is None


TRANSPOSE_SPEC = """
kernel k
size rows = 64
size cols = 48
scalar rows: int = rows
scalar cols: int = cols
in src: float[rows * cols]
out dst: float[rows * cols]
block = 32, 8
grid = ceil_div(cols, block.x), ceil_div(rows, block.y)
"""


@pytest.mark.parametrize("ctype", ["uint", "uint32_t", "unsigned int", "size_t", "int64_t",
                                   "uint64_t", "long", "unsigned long long", "const uint"])
def test_every_integer_spelling_of_a_2d_index_is_an_index(ctype):
    from optimizer_fixtures import context_with_spec

    text = f"""
__global__ void k(const float* src, float* dst, int rows, int cols) {{
    {ctype} c = blockIdx.x * blockDim.x + threadIdx.x;
    {ctype} r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) dst[c * rows + r] = src[r * cols + c];
}}"""
    plan = make_plan(context_with_spec(text, "k", TRANSPOSE_SPEC))
    assert any("tiled_transpose" in c.passes for c in plan.candidates), plan.not_applied
    assert not [n for n in plan.not_applied if "integer type" in n.reason]


def test_a_float_index_is_still_refused_with_its_type_and_line():
    from optimizer_fixtures import context_with_spec

    text = """
__global__ void k(const float* src, float* dst, int rows, int cols) {
    float c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) dst[(int)c * rows + r] = src[r * cols + (int)c];
}"""
    plan = make_plan(context_with_spec(text, "k", TRANSPOSE_SPEC))
    tt = {n.pass_name: n for n in plan.not_applied}["tiled_transpose"]
    assert tt.reason == "the index c at line 3 has type 'float', expected an integer type"
    assert (tt.line, tt.at_kernel) == (3, False)


def test_uint_matmul_gets_both_matmul_passes():
    from variant_corpus import ROOT
    target = load_target(ROOT / "tiled_matmul" / "uint_index.cu")
    plan = make_plan(make_context(target.text, str(target.path), target.kernel.name,
                                  target.spec))
    assert [c.label for c in plan.candidates[:6]] == [
        "restrict regblock-matmul tile=128x128x8 thread=8x8 block=16x16",
        "restrict regblock-matmul+dbuf tile=128x128x8 thread=8x8 block=16x16",
        "restrict tiled-matmul tile=32x4 block=32x8",
        "regblock-matmul tile=128x128x8 thread=8x8 block=16x16",
        "regblock-matmul+dbuf tile=128x128x8 thread=8x8 block=16x16",
        "tiled-matmul tile=32x4 block=32x8"]
    assert not {"tiled_matmul", "regblock_matmul"} & {n.pass_name for n in plan.not_applied}


FLAT_SPEC = """
kernel k
size B = 4
size T = 64
size C = 48
scalar B: int = B
scalar T: int = T
scalar C: int = C
in x: float[B * T * C]
out y: float[B * T * C]
block = 256
grid = ceil_div(B * T * C, block.x)
"""


def _not_applied(text, spec, kernel="k"):
    from optimizer_fixtures import context_with_spec

    ctx = context_with_spec(text, kernel, spec)
    plan = make_plan(ctx)
    return plan, {n.pass_name: n for n in plan.not_applied}, ctx


def _rewrite(ctx, pass_name):
    from cudalens.optimizer.passes import get

    return get(pass_name).apply(ctx).source


def test_a_local_bound_from_parameters_is_folded_into_the_guard():
    text = """
__global__ void k(const float* x, float* y, int B, int T, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int N = B * T * C;
    if (i < N) y[i] = 2.0f * x[i] + (float)N;
}"""
    plan, missing, ctx = _not_applied(text, FLAT_SPEC)
    assert {"gridstride", "vectorize_gridstride"}.isdisjoint(missing)
    [first] = [c for c in plan.candidates if c.passes == ("gridstride",)][:1]
    assert first.launch.grid == ("min(ceil_div(((B * T) * C), block.x), sm_count * 8)",)
    source = _rewrite(ctx, "gridstride")
    assert "int N" not in source and "i < B * T * C; i += stride" in source
    assert "(float)(B * T * C)" in source  # the body's use too


def test_a_local_bound_of_another_type_keeps_its_type_and_a_changed_one_is_not_folded():
    text = """
__global__ void k(const float* x, float* y, int B, int T, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    long n = B * T;
    const long N = n * C;
    if (i < N) y[i] = x[i];
}"""
    plan, missing, ctx = _not_applied(text, FLAT_SPEC)
    assert "gridstride" not in missing
    source = _rewrite(ctx, "gridstride")
    assert "i < (long)(((long)(B * T)) * C); i += stride" in source
    changed = """
__global__ void k(const float* x, float* y, int B, int T, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int N = B * T * C;
    if (i < N) { y[i] = x[i]; N = 0; }
}"""
    _, missing, _ = _not_applied(changed, FLAT_SPEC)
    assert missing["gridstride"].reason == (
        "expected the bounds guard 'if (i < n)' or 'if (i >= n) return;' after the index, "
        "found 'int N = B * T * C;' at line 4")
    assert missing["gridstride"].line == 4


def test_histogram_and_column_reduction_read_a_local_bound():
    hist = """
__global__ void k(const int* v, int* bins, int B, int T) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int count = B * T;
    if (i >= count) return;
    atomicAdd(&bins[v[i] & 15], 1);
}"""
    hist_spec = """
kernel k
size B = 8
size T = 1000
scalar B: int = B
scalar T: int = T
in v: int32[B * T] range(0, 256)
inout bins: int32[16] range(0, 1)
block = 256
grid = ceil_div(B * T, block.x)
atomics
"""
    _, missing, _ = _not_applied(hist, hist_spec)
    assert "hist_privatize" not in missing
    col = """
__global__ void k(const float* x, float* y, int n, int h, int w) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int d = h * w;
    if (j < d) {
        float s = 0.0f;
        for (int r = 0; r < n; ++r) s += x[r * d + j];
        y[j] = s;
    }
}"""
    col_spec = """
kernel k
size n = 100
size h = 20
size w = 35
scalar n: int = n
scalar h: int = h
scalar w: int = w
in x: float[n * h * w]
out y: float[h * w]
block = 256
grid = ceil_div(h * w, block.x)
"""
    _, missing, _ = _not_applied(col, col_spec)
    assert "column_reduce" not in missing


def test_a_row_pointer_is_a_parameter_plus_a_sum_of_offsets():
    from variant_corpus import ROOT
    target = load_target(ROOT / "warp_per_row" / "causal_local_rows.cu")
    plan = make_plan(make_context(target.text, str(target.path), target.kernel.name,
                                  target.spec))
    assert any(c.passes == ("warp_per_row",) for c in plan.candidates)
    assert not {"warp_per_row", "block_per_row"} & {n.pass_name for n in plan.not_applied}
    # llm.c's spelling of the max, an if around the assignment, is a max too
    # (cudalens.optimizer.minmax); an if that assigns another value than it compares is not
    from optimizer_fixtures import context_with_spec
    spec = target.path.with_suffix(".cu.spec").read_text()
    text = target.text.replace("m = fmaxf(m, srow[j]);", "if (srow[j] > m) m = srow[j];")
    plan = make_plan(context_with_spec(text, "causal_rows", spec))
    assert any(c.passes == ("warp_per_row",) for c in plan.candidates)
    assert "warp_per_row" not in {n.pass_name for n in plan.not_applied}
    text = target.text.replace("m = fmaxf(m, srow[j]);", "if (srow[j] > m) m = 2 * srow[j];")
    wpr = {n.pass_name: n for n in make_plan(context_with_spec(text, "causal_rows", spec))
           .not_applied}["warp_per_row"]
    assert wpr.reason == ("'m = 2 * srow[j]' (line 15) changes m across columns but is not "
                          "'acc += value', 'acc = fmaxf(acc, value)' or 'if (value > acc) "
                          "acc = value'")
    assert wpr.line == 15


def _corpus_plan(rel):
    from variant_corpus import ROOT
    target = load_target(ROOT / rel)
    return make_plan(make_context(target.text, str(target.path), target.kernel.name,
                                  target.spec)), target


def test_a_csr_row_loop_gets_a_warp_per_row_and_no_stencil_tile():
    plan, _ = _corpus_plan("warp_per_row/csr_memory_sum.cu")
    assert plan.candidates[0].passes == ("restrict_const", "warp_per_row")
    assert not any("stencil_tile" in c.passes or "block_per_row" in c.passes
                   for c in plan.candidates)
    by_pass = {n.pass_name: n for n in plan.not_applied}
    assert "warp_per_row" not in by_pass
    st = by_pass["stencil_tile"]  # the gather through the row's entries comes first
    assert st.reason.startswith("the read 'a[k]' (line 9) is at an index computed from memory")
    assert (st.line, st.at_kernel) == (9, False)
    bpr = by_pass["block_per_row"]
    assert bpr.reason == ("rows of 20 entries on average (starts's csr fill at the spec's "
                          "sizes) are short: a warp per i keeps its lanes busy, a block per i "
                          "pays from 1024 entries")
    # y[i] += ... inside the loop became a register sum (memory_acc) reduced across the warp
    # and stored once by lane 0: the pass wrote it on the original's lines, the candidate
    # has the declaration before the loop and the store after it on lines of their own
    from cudalens.optimizer.passes import get
    from cudalens.optimizer.staged_search import ordered
    from variant_corpus import ROOT
    target = load_target(ROOT / "warp_per_row" / "csr_memory_sum.cu")
    ctx = make_context(target.text, str(target.path), target.kernel.name, target.spec)
    kept = get("warp_per_row").apply(ctx).source.split("\n")
    assert kept[9] == ("        float y_acc = 0.0f; for (unsigned k = (starts[i]) + lane; "
                       "k < starts[i + 1]; k += 32)")
    assert kept[13] == "        } if (lane == 0) y[i] += y_acc;"
    first = ordered(ctx, 0)[0]
    assert first.passes == plan.candidates[0].passes
    lines = first.source.split("\n")
    assert lines[8:] == [
        "    if (i < n) {",
        "        float y_acc = 0.0f;",
        "        for (unsigned k = (starts[i]) + lane; k < starts[i + 1]; k += 32)",
        "            y_acc += a[k] * v[cols[k]];",
        "        for (int offset = 16; offset > 0; offset /= 2) {",
        "            y_acc += __shfl_xor_sync(0xffffffffu, y_acc, offset);",
        "        }",
        "        if (lane == 0) y[i] += y_acc;",
        "    }",
        "}",
        ""]


def test_row_pointers_are_not_a_stencil():
    """Row pointers with no gather after them: row lengths, and a count over each row's
    entries; by the spec's csr fill, or by their reads bounding a loop."""
    spec = (ROOT / "tests" / "data" / "variants" / "warp_per_row" /
            "csr_spmv_bounds.cu.spec").read_text()
    lengths = """
__global__ void csr_spmv(const int* row_off, const int* col_of, const float* val,
                         const float* x, float* y, int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) y[r] = (float)(row_off[r + 1] - row_off[r]);
}"""
    _, missing, _ = _not_applied(lengths, spec, "csr_spmv")
    assert missing["stencil_tile"].reason == (
        "row_off holds CSR row pointers ('csr(nnz)' in the spec): its reads ('row_off[r + 1]', "
        "line 5) delimit a row's entries, not a neighbourhood of r to stage in shared memory")
    assert missing["stencil_tile"].line == 5
    counts = """
__global__ void csr_spmv(const int* row_off, const int* col_of, const float* val,
                         const float* x, float* y, int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float n = 0.0f;
        for (int e = row_off[r]; e < row_off[r + 1]; ++e) n += 1.0f;
        y[r] = n;
    }
}"""
    _, missing, _ = _not_applied(counts, spec.replace(" csr(nnz)", " range(0, 4)"), "csr_spmv")
    assert missing["stencil_tile"].reason == (
        "'row_off[r]' (line 7) starts or bounds the loop at line 7: row_off holds row pointers "
        "that delimit a row's entries, not a neighbourhood of r to stage in shared memory")
    assert missing["stencil_tile"].line == 7



def test_fast_math_follows_the_float_arithmetic_of_a_bf16_kernel():
    plan, _ = _corpus_plan("vectorize_gridstride/bf16_float_locals.cu")
    assert "fast_math" not in {n.pass_name for n in plan.not_applied}
    fast = [c for c in plan.candidates if "fast_math" in c.passes]
    labels = [c.label for c in fast]
    assert labels[:2] == ["restrict vec2+gridstride intrinsics block=512 grid=8*SMs",
                          "restrict vec2+gridstride fastmath block=512 grid=8*SMs"]
    assert fast[0].passes == ("restrict_const", "vectorize_gridstride", "fast_math",
                              "launch_config")


def test_a_tree_whose_rounds_open_with_the_barrier_gets_warp_reduce():
    plan, target = _corpus_plan("warp_reduce/column_barrier_first.cu")
    assert [c.passes for c in plan.candidates[:2]] == [("restrict_const", "warp_reduce"),
                                                       ("warp_reduce",)]
    assert plan.candidates[0].launch.shared == "block.x * 4"
    # rounds without a barrier are still refused, at the loop's line
    text = target.text.replace(
        "        __syncthreads();\n        if (t < half) {", "        if (t < half) {")
    assert text != target.text
    spec = target.path.with_suffix(".cu.spec").read_text()
    _, missing, _ = _not_applied(text, spec, "column_totals")
    assert missing["warp_reduce"].reason == ("the loop at line 16 does not end with "
                                             "__syncthreads();")
    assert missing["warp_reduce"].line == 16


def test_a_shared_size_of_the_block_is_recomputed_for_the_rewrites_block():
    text = """
__global__ void k(const float* src, float* dst, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) dst[c * rows + r] = src[r * cols + c];
}"""
    plan, missing, _ = _not_applied(text, TRANSPOSE_SPEC + "shared = block.x * 4\n")
    assert not [n for n in plan.not_applied if "depends on the block" in n.reason
                and n.pass_name != "launch_config"]
    tt = [c for c in plan.candidates if c.passes == ("tiled_transpose",)][0]
    assert (tt.launch.block, tt.launch.shared) == (("32", "8"), "block.x * 4")
    from cudalens.spec.resolve import resolve_launch
    from cudalens.spec.model import LaunchDecl
    launch = LaunchDecl(block=tt.launch.block, grid=tt.launch.grid, shared=tt.launch.shared)
    assert resolve_launch(launch, {"rows": 64, "cols": 48}, None).shared_bytes == 32 * 4
