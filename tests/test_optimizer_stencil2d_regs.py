"""``stencil2d_regs``: a tile of RX x RY outputs per thread of a 2D stencil from a register
window (one vector load per window row plus the halo). The plan offers it for the 2D
convolution example in the first batch; nvcc compiles every rewrite with vector loads and
stores and no local memory; on the CPU (``block_sim``) every output is bit for bit the
original's at ragged sizes (rows not a multiple of RY, columns not a multiple of RX or of the
block's columns), with the input's pointer aligned and moved off 16 bytes, under the new launch
and under the user's own (a drop-in); kernels outside the pattern are refused with the reason
and its line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable
from cudalens.optimizer.passes import stencil2d_regs
from cudalens.optimizer.plan import make_plan
from cudalens.optimizer.reasons import line_of
from cudalens.spec.model import BufferDecl

import block_sim
from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec
from variant_corpus import Variant, context

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ROOT / "tests" / "data" / "variants"
FILES = [f"stencil2d_regs/{p.name}" for p in sorted((VARIANTS / "stencil2d_regs").glob("*.cu"))]


def _example():
    from cudalens.optimizer.context import make_context
    from cudalens.target import load_target

    t = load_target(ROOT / "examples" / "conv2d.cu")
    return make_context(t.text, str(t.path), t.kernel.qualified_name, t.spec)


def _ctx(file: str):
    if file == "example":
        return _example()
    folder, name = file.split("/")
    return context(Variant(folder, VARIANTS / folder / name))


def test_corpus_has_the_five_spellings():
    assert [f.split("/")[1] for f in FILES] == [
        "box_blur_unsigned.cu", "conv3x3_constant.cu", "conv5x5_pitch.cu",
        "double_laplace5.cu", "jacobi5_interior.cu"]


def test_plan_offers_the_register_tile_in_the_first_batch():
    plan = make_plan(_example())
    ours = {c.label: c for c in plan.candidates if "stencil2d_regs" in c.passes}
    assert "stencil2d-regs vec4 ry=2" in ours
    assert any(c.first_batch for c in ours.values())
    assert "stencil2d_regs" not in {n.pass_name for n in plan.not_applied}


def test_example_rewrite_keeps_the_statements_and_loads_float4_rows():
    ctx = _example()
    assert stencil2d_regs.check(ctx) is None
    assert stencil2d_regs.parameter_space(ctx) == ({"ry": 2}, {"ry": 4}, {"ry": 1})
    result = stencil2d_regs.apply(ctx)
    src = result.source
    assert result.tags == ("stencil2d-regs", "vec4", "ry=2")
    assert result.launch.block == ("16", "16")
    assert result.launch.grid == ("ceil_div(ceil_div(cols, block.x), 4)",
                                  "ceil_div(ceil_div(rows, block.y), 2)")
    assert "const int tx = ((cols + 16 - 1) / 16) * 16;  // the original's threads along x" in src
    assert "const int ty = ((rows + 16 - 1) / 16) * 16;  // and along y" in src
    assert "auto orig = [&](int col, int row) {" in src
    assert "auto near = [&](int col, int row, int k, int j) {" in src
    # the statements twice: as written (the edges), and reading the window with every
    # guard proved (the interior)
    assert src.count("acc += w[(dy + RADIUS) * KSIZE + (dx + RADIUS)] * in[r * cols + c];") == 1
    assert src.count("in_win[k + dx + dy * 6];") == 1
    assert src.count("if (r >= 0 && r < rows && c >= 0 && c < cols) {") == 1
    # the taps' r and c, read only by the guard and the read the interior replaced, are gone
    assert src.count("int r = row + dy;") == 1 and src.count("int c = col + dx;") == 1
    window = ("if (r0 >= 1 && c0 >= 1 && reinterpret_cast<size_t>(in) % 16 == 0 && cols > 0 && "
              "cols % 4 == 0 && (r0 + 2) * cols + c0 + 4 < rows * cols &&")
    assert window in src
    for q, at in enumerate(["(r0 - 1)", "r0", "(r0 + 1)", "(r0 + 2)"]):
        row = "in_row" + (str(q) if q else "")
        v = "in_v" + (str(q) if q else "")
        assert f"const int {row} = {at} * cols + c0;" in src
        assert f"const float4 {v} = *reinterpret_cast<const float4*>(&in[{row}]);" in src
        assert f"{row} - 1], {v}.x, {v}.y, {v}.z, {v}.w, in[{row} + 4]" in src
    assert "const float in_win[24] = {in[in_row - 1], in_v.x," in src
    assert "(out_r[j] = (acc), wrote |= 1u << j);" in src
    assert "for (int j = 0; j < 4; ++j) near(c0 + j, r0 + i, (i + 1) * 6 + j + 1, j);" in src
    assert ("if (wrote == 15u && reinterpret_cast<size_t>(out) % 16 == 0 && cols % 4 == 0) {"
            in src)
    assert ("*reinterpret_cast<float4*>(&out[(r0 + i) * cols + c0]) = "
            "float4{out_r[0], out_r[1], out_r[2], out_r[3]};") in src
    assert "if ((wrote >> j) & 1u) out[(r0 + i) * cols + c0 + j] = out_r[j];" in src
    assert "orig(c0 + j, r0 + i);" in src
    # the tile test proving every guard (sums in 64 bits; r0 >= 1 and c0 >= 1 are the
    # window's own), then the interior copy: guards written as constants, the weights read
    # from registers loaded once per tile
    proof = "(long long)r0 + 2 < rows && (long long)c0 + 4 < cols) {"
    assert src.count(window + "\n" + " " * 20 + proof) == 1
    assert ("const float w_reg[9] = {w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]};"
            in src)
    assert src.count("acc += w_reg[(dy + RADIUS) * KSIZE + (dx + RADIUS)] * "
                     "in_win[k + dx + dy * 6];") == 1
    assert src.count("if (true) {") == 2  # the output's guard and the tap's
    assert src.index(proof) < src.index("const float w_reg[9]") < src.index("auto near =")
    assert src.index("auto near =") < src.index("orig(c0 + j, r0 + i);")
    assert "long long" not in src.replace(proof, "")  # the spec's sizes fit int
    assert "bit for bit the original's" in result.explanation
    assert "also correct under the user's launch" in result.explanation


def test_rows_per_thread_shape_the_window_and_the_grid():
    ctx = _example()
    four = stencil2d_regs.apply(ctx, ry=4)
    assert four.launch.grid[1] == "ceil_div(ceil_div(rows, block.y), 4)"
    assert "const float in_win[36] = {" in four.source  # RY + 2 rows of RX + 2
    one = stencil2d_regs.apply(ctx, ry=1)
    assert "const float in_win[18] = {" in one.source
    assert "cy * 1 < ty" in one.source
    assert one.launch.grid[1] == "ceil_div(rows, block.y)"  # the user's rows of blocks
    with pytest.raises(ValueError, match="ry must be one of"):
        stencil2d_regs.apply(ctx, ry=3)


def test_a_five_by_five_with_its_own_pitch_windows_two_on_each_side():
    ctx = _ctx("stencil2d_regs/conv5x5_pitch.cu")
    src = stencil2d_regs.apply(ctx).source
    assert "const float input_win[48] = {" in src  # 2 + 4 rows of 4 + 4
    assert ("if (r0 >= 2 && c0 >= 2 && reinterpret_cast<size_t>(input) % 16 == 0 && "
            "pitch > 0 && pitch % 4 == 0 && (r0 + 3) * pitch + c0 + 5 < rows * pitch &&") in src
    assert "input_win[k + a * 8 + b - 18]" in src
    # the output's pitch is cols: its vector store tests that one
    assert "reinterpret_cast<size_t>(output) % 16 == 0 && cols % 4 == 0" in src


@needs_nvcc
def test_every_rewrite_compiles_with_vector_loads_and_stores_and_no_local_memory():
    from concurrent.futures import ThreadPoolExecutor

    files = ["example"] + FILES
    sources = [stencil2d_regs.apply(_ctx(f)).source for f in files]
    sources += [stencil2d_regs.apply(_example(), ry=r).source for r in (4, 1)]
    names = files + ["example ry=4", "example ry=1"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda s: compile_source(s, ptx=True), sources))
    for f, got in zip(names, results):
        assert got.ok, (f, got.stderr)
        assert re.search(r"ld\.global(\.nc)?\.v(4\.f32|2\.f64)", got.ptx), f
        assert re.search(r"st\.global\.v(4\.f32|2\.f64)", got.ptx), f
        assert not re.search(r"(ld|st)\.local", got.ptx), f  # the window stays in registers


def _sizes(ctx, values):
    return dict(zip([s.name for s in ctx.spec.sizes], values))


def _run_both(ctx, sizes, shift, ry=2, launch_of_rewrite=True, checked=False):
    kernel = ctx.kernel.qualified_name
    result = stencil2d_regs.apply(ctx, ry=ry)
    moved = {d.name: shift for d in ctx.spec.params
             if isinstance(d, BufferDecl) and d.role == "in"}
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes, shift=moved)
    launch = result.launch if launch_of_rewrite else ctx.spec.launch
    after = block_sim.run(result.source, kernel, ctx.spec, sizes, launch, shift=moved,
                          checked=checked, timeout=120)
    return before, after


def _out(ctx):
    return next(d.name for d in ctx.spec.params if isinstance(d, BufferDecl) and d.role != "in")


# ragged: 37 rows (not a multiple of 2 or 4), 44 columns (a multiple of RX, not of the 64
# columns a 16-wide block covers), 45 (the pitch not a multiple of RX: no window)
CASES = [("example", (37, 44), 0, 2), ("example", (37, 44), 1, 2), ("example", (37, 45), 0, 2),
         ("example", (37, 44), 0, 4), ("example", (38, 44), 0, 1),
         ("stencil2d_regs/box_blur_unsigned.cu", (37, 44), 0, 2),
         ("stencil2d_regs/box_blur_unsigned.cu", (37, 44), 1, 4),
         ("stencil2d_regs/conv3x3_constant.cu", (37, 44), 0, 2),
         ("stencil2d_regs/conv3x3_constant.cu", (37, 44), 1, 2),
         ("stencil2d_regs/conv5x5_pitch.cu", (37, 45, 48), 0, 2),
         ("stencil2d_regs/conv5x5_pitch.cu", (37, 45, 48), 1, 4),
         ("stencil2d_regs/double_laplace5.cu", (37, 44), 0, 2),
         ("stencil2d_regs/double_laplace5.cu", (37, 44), 1, 4),
         ("stencil2d_regs/jacobi5_interior.cu", (37, 44), 0, 2),
         ("stencil2d_regs/jacobi5_interior.cu", (37, 44), 1, 1)]


@block_sim.needs_gxx
@pytest.mark.parametrize("file,values,shift,ry", CASES)
def test_every_output_is_bit_for_bit_the_originals(file, values, shift, ry):
    ctx = _ctx(file)
    before, after = _run_both(ctx, _sizes(ctx, values), shift, ry)
    assert after.buffers == before.buffers  # the same reads in the same order per output
    n = len(before.buffers[_out(ctx)]) - block_sim.GUARD
    assert any(v != 77 for v in before.buffers[_out(ctx)][:n])


@block_sim.needs_gxx
def test_the_window_path_runs_and_a_wrong_window_would_show():
    """The comparison above sees the window's values: the same rewrite with the window's
    slots moved by one column computes other outputs."""
    ctx = _example()
    sizes = _sizes(ctx, (37, 44))
    result = stencil2d_regs.apply(ctx)
    wrong = result.source.replace("in_win[k + dx + dy * 6]", "in_win[k + dx + dy * 6 + 1]")
    assert wrong != result.source
    before = block_sim.run(ctx.text, "conv2d_3x3", ctx.spec, sizes)
    after = block_sim.run(wrong, "conv2d_3x3", ctx.spec, sizes, result.launch)
    assert after.buffers["out"] != before.buffers["out"]


@block_sim.needs_gxx
@pytest.mark.parametrize("file", ["example", "stencil2d_regs/double_laplace5.cu"])
def test_the_users_launch_computes_the_same_outputs_and_stays_in_range(file):
    ctx = _ctx(file)
    sizes = _sizes(ctx, (21, 76))
    before, after = _run_both(ctx, sizes, 2, launch_of_rewrite=False, checked=True)
    assert after.buffers == before.buffers  # a drop-in: the extra threads do nothing


SPEC = """
kernel k
size rows = 512
size cols = 512
scalar rows: int = rows
scalar cols: int = cols
in x: float[rows * cols]
in idx: int32[rows * cols]
out y: float[rows * cols]
block = 16, 16
grid = ceil_div(cols, block.x), ceil_div(rows, block.y)
"""

REJECTS = [
    ("""
__global__ void k(float* x, const int* idx, float* y, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < 1 || c < 1 || r >= rows - 1 || c >= cols - 1) return;
    y[r * cols + c] = x[(r - 1) * cols + c] + x[(r + 1) * cols + c];
    x[r * cols + c] = 0.0f;
}""", "x is read around (r, c) and also written ('x[r * cols + c]', line 7): a register "
      "window of it would miss what other outputs write; the pass windows inputs that do not "
      "change", 7),
    ("""
__global__ void k(const float* x, const int* idx, float* y, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= rows || c >= cols) return;
    y[r * cols + c] = x[r * cols + c] + x[idx[r * cols + c]];
}""", "the read 'x[idx[r * cols + c]]' (line 6) is at an index computed from memory", 6),
    ("""
__global__ void k(const float* x, const int* idx, float* y, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < 1 || r >= rows - 1 || c >= cols) return;
    y[r * cols + c] = x[(r - 1) * cols + c] + x[(r + 1) * cols + c] + threadIdx.x;
}""", "the statements after the indices use threadIdx (line 6): each thread now computes "
      "several outputs", 6),
    ("""
__global__ void k(const float* x, const int* idx, float* y, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= rows || c >= cols) return;
    y[r * cols + c] = x[c * rows + r] + x[r * cols + c];
}""", "the read 'x[c * rows + r]' (line 6) is not x[(r + dy) * W + (c + dx)] with W a scalar "
      "parameter and dy, dx constants or constant-bound loop variables", 6),
    ("""
__global__ void k(const float* x, const int* idx, float* y, int rows, int cols) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 1 || i >= rows * cols - 1) return;
    y[i] = x[i - 1] + x[i + 1];
}""", "the kernel does not index along y; stencil_regs covers 1D stencils", None),
]


@pytest.mark.parametrize("text,reason,line", REJECTS)
def test_kernels_outside_the_pattern_are_refused_with_the_reason(text, reason, line):
    ctx = context_with_spec(text, "k", SPEC)
    got = stencil2d_regs.check(ctx)
    assert got.startswith(reason) and line_of(got) == line, got
    with pytest.raises(PassNotApplicable, match=re.escape(reason[:40])):
        stencil2d_regs.apply(ctx)


@block_sim.needs_gxx
@pytest.mark.parametrize("values,shift", [((37, 44), 0), ((37, 44), 1), ((38, 45), 0)])
def test_the_handwritten_reference_gives_the_originals_outputs(values, shift):
    """benchmarks/handwritten/conv2d.stencil2d_regs.cu, under the launch the pass's default
    parameters choose (bench_handwritten.py times it there): bit for bit the original's, with
    its fast path (aligned, 44 columns), a moved pointer and a ragged pitch (the slow path)."""
    ctx = _example()
    sizes = _sizes(ctx, values)
    hand = (ROOT / "benchmarks" / "handwritten" / "conv2d.stencil2d_regs.cu").read_text()
    launch = stencil2d_regs.apply(ctx).launch
    before = block_sim.run(ctx.text, "conv2d_3x3", ctx.spec, sizes, shift={"in": shift})
    after = block_sim.run(hand, "conv2d_3x3", ctx.spec, sizes, launch, shift={"in": shift},
                          checked=shift == 0)
    assert after.buffers == before.buffers


@block_sim.needs_gxx
def test_the_handwritten_fast_path_runs_at_those_sizes():
    """The comparison above sees the hand-written fast path: weighting its products
    differently changes the outputs."""
    ctx = _example()
    sizes = _sizes(ctx, (37, 44))
    hand = (ROOT / "benchmarks" / "handwritten" / "conv2d.stencil2d_regs.cu").read_text()
    wrong = hand.replace("x[i + dy][j + dx];", "x[i + dy][j + dx] * 1.5f;")
    assert wrong != hand
    launch = stencil2d_regs.apply(ctx).launch
    before = block_sim.run(ctx.text, "conv2d_3x3", ctx.spec, sizes)
    after = block_sim.run(wrong, "conv2d_3x3", ctx.spec, sizes, launch)
    assert after.buffers["out"] != before.buffers["out"]


@needs_nvcc
def test_sizes_past_int_get_64_bit_counters_and_window_indices():
    """At 50000 x 50000 the flat indices pass 2^31: the chunk counters, the window's row
    indices and its test are long long (the original's own int indices are its matter)."""
    ctx = context_with_spec(_example().text, "conv2d_3x3", """
kernel conv2d_3x3
size rows = 50000
size cols = 50000
scalar rows: int = rows
scalar cols: int = cols
in in: float[rows * cols]
in w: float[9]
out out: float[rows * cols]
block = 16, 16
grid = ceil_div(cols, block.x), ceil_div(rows, block.y)
""")
    src = stencil2d_regs.apply(ctx).source
    assert "const long long c0 = cx * 4, r0 = cy * 2;" in src
    assert "const long long in_row = (r0 - 1) * cols + c0;" in src
    assert compile_source(src).ok


def _interior(file: str) -> tuple[str, str]:
    """(the tile test's proved conditions, the interior copy's text) of ``file``'s default
    rewrite."""
    src = stencil2d_regs.apply(_ctx(file)).source
    head = src.index("// every guard holds for the whole tile")
    test = src[:head].rstrip().splitlines()[-1].strip()
    return test, src[head:src.index("} else {", head)]


def test_unsigned_guards_are_proved_with_their_values_in_int_range():
    test, inner = _interior("stencil2d_regs/box_blur_unsigned.cu")
    # unsigned 32-bit arithmetic equals the integers' only where each side stays in range
    # (c0 >= 1 and r0 >= 1 are the window's own tests, on the line before)
    assert test == ("c0 <= 2147483643 && (long long)width >= 0 && width <= 2147483647 && "
                    "(long long)c0 + 4 < width && r0 <= 2147483645 && (long long)height >= 0 && "
                    "height <= 2147483647 && (long long)r0 + 2 < height) {")
    assert "if (false) return;" in inner  # the early exit and the edge copy are not taken
    assert inner.count("if (false) {") == 1


def test_a_bool_local_and_an_early_return_are_proved_and_a_jump_branch_is_not_taken():
    test, inner = _interior("stencil2d_regs/conv3x3_constant.cu")
    assert test == "(long long)r0 + 2 < height && (long long)c0 + 4 < width) {"
    assert "if (false) return;" in inner
    assert "float v = true ? image_win[" in inner


def test_taps_after_a_continue_not_taken_are_loaded_once_into_registers():
    test, inner = _interior("stencil2d_regs/conv5x5_pitch.cu")
    assert test == "(long long)c0 + 5 < cols && (long long)r0 + 3 < rows) {"
    assert "const float taps_reg[25] = {taps[0], taps[1]," in inner
    assert "taps[24]};" in inner
    assert "if (false) continue;" in inner
    assert "if (true) s += taps_reg[a * K + b] * input_win[" in inner


def test_a_guard_through_a_cast_is_not_proved():
    from cudalens.optimizer.context import make_context
    from optimizer_fixtures import context_with_spec  # noqa: F401  (fixtures module loads)

    text = (ROOT / "examples" / "conv2d.cu").read_text()
    cast = text.replace("if (r >= 0 && r < rows && c >= 0 && c < cols)",
                        "if ((unsigned)r < (unsigned)rows && c >= 0 && c < cols)")
    assert cast != text
    from cudalens.target import load_target

    t = load_target(ROOT / "examples" / "conv2d.cu")
    ctx = make_context(cast, str(t.path), t.kernel.qualified_name, t.spec)
    src = stencil2d_regs.apply(ctx).source
    # (unsigned)r < (unsigned)rows is false for r = -1, which a signed proof would miss
    assert "if ((unsigned)r < (unsigned)rows && true && true) {" in src


def _variant(old: str, new: str):
    from cudalens.optimizer.context import make_context
    from cudalens.target import load_target

    t = load_target(ROOT / "examples" / "conv2d.cu")
    text = t.text.replace(old, new)
    assert text != t.text
    return stencil2d_regs.apply(make_context(text, str(t.path), t.kernel.qualified_name,
                                             t.spec)).source


def test_a_guard_that_does_not_move_with_the_tile_is_kept_in_the_interior_copy():
    src = _variant("acc += w[", "if (cols > 8) acc += w[")
    head = src.index("// every guard holds for the whole tile")
    inner = src[head:src.index("} else {", head)]
    # cols > 8 would send every tile of a narrow image to the per-output path; the weights,
    # no longer read at every point, stay in memory
    assert "if (cols > 8) acc += w[(dy + RADIUS) * KSIZE + (dx + RADIUS)] * in_win[" in inner
    assert "w_reg" not in src
    assert "cols > 8" not in src[:head].splitlines()[-1]


def test_a_tap_index_still_read_after_the_proofs_is_kept():
    # c is read by the store below the guard: its declaration stays in the interior copy
    src = _variant("acc += w[(dy + RADIUS) * KSIZE + (dx + RADIUS)] * in[r * cols + c];",
                   "acc += w[(dy + RADIUS) * KSIZE + (dx + RADIUS)] * in[r * cols + c] * c;")
    head = src.index("// every guard holds for the whole tile")
    inner = src[head:src.index("} else {", head)]
    assert "int c = col + dx;" in inner and "int r = row + dy;" not in inner
    assert "in_win[k + dx + dy * 6] * c;" in inner
