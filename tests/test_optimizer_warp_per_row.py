"""Pass ``warp_per_row``: one-thread-per-row kernels (softmax, GEMV, layer norm) become one
warp per row.

The examples are rewritten in place (the row index becomes the warp's, each column loop
starts at the lane and steps by 32, each accumulator is combined across the warp, per-row
stores run in lane 0); the rewrites compile with nvcc and, on the CPU block simulator, give
the original's outputs within float rounding (sums are added in another order). Negative
cases assert the reason.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable, make_context
from cudalens.optimizer.passes import warp_per_row
from cudalens.source.parser import parse_source
from cudalens.target import load_target

import block_sim
from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _example(name: str):
    target = load_target(EXAMPLES / f"{name}.cu")
    return make_context(target.text, str(target.path), target.kernel.name, target.spec), \
        target.kernel.name


def _signature(source: str, kernel: str):
    return [(p.name, p.type, p.is_pointer, p.is_const, p.is_restrict)
            for p in parse_source(source, "x.cu").kernel(kernel).parameters]


def test_softmax_rewrite_in_place():
    ctx, kernel = _example("softmax")
    assert warp_per_row.check(ctx) is None
    online = tuple({"warps_per_block": w, "online": True} for w in (4, 8, 2))
    plain = ({"warps_per_block": 4}, {"warps_per_block": 8}, {"warps_per_block": 2}) + online
    assert warp_per_row.parameter_space(ctx) == plain + tuple(
        {**d, "gridstride": True} for d in plain)
    result = warp_per_row.apply(ctx, warps_per_block=4)
    src = result.source
    assert _signature(src, kernel) == _signature(ctx.text, kernel)
    assert "int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;" in src
    assert "const unsigned int lane = threadIdx.x % 32u;" in src
    assert "for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);" in src
    assert "m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));" in src
    assert "sum += __shfl_xor_sync(0xffffffffu, sum, offset);" in src
    assert "for (int c = lane; c < cols; c += 32) yr[c] = expf(xr[c] - m) / sum;" in src
    # the max is combined right after its loop, before the sum's loop reads it
    assert src.index("m = fmaxf(m, __shfl_xor_sync") < src.index("float sum = 0.0f;")
    assert result.launch.block == ("128",)
    assert result.launch.grid == ("ceil_div(rows, 4)",)
    assert result.explanation.startswith(
        "one warp per row instead of one thread: the 32 lanes read 32 consecutive elements of "
        "the row (coalesced 128-byte requests instead of 32 sectors a row apart), and the grid "
        "runs 32x the threads; m, sum combined across the warp with 5 __shfl_xor_sync steps; "
        "block 128 (sums are added in a different order")


def test_gemv_row_result_is_stored_by_lane_zero():
    ctx, _ = _example("gemv")
    src = warp_per_row.apply(ctx, warps_per_block=8).source
    assert "if (lane == 0) y[row] = acc;" in src
    assert "for (int c = lane; c < cols; c += 32) {" in src
    assert "lane 0 stores the per-row result" in warp_per_row.apply(ctx).explanation


def test_layernorm_keeps_the_statements_between_the_loops():
    ctx, _ = _example("layernorm")
    src = warp_per_row.apply(ctx).source
    combine_sum = src.index("sum += __shfl_xor_sync")
    assert combine_sum < src.index("float mean = sum / cols;") < src.index("sq += __shfl_xor_sync")
    assert src.index("sq += __shfl_xor_sync") < src.index("float rstd = rsqrtf(sq / cols + eps);")


@needs_nvcc
def test_every_rewrite_compiles():
    sources = [warp_per_row.apply(_example(n)[0], warps_per_block=w).source
               for n in ("softmax", "gemv", "layernorm") for w in (4, 2)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(compile_source, sources))
    for compiled in results:
        assert compiled.ok, compiled.stderr


def _close(a: list, b: list, rel: float) -> bool:
    scale = max(abs(x) for x in a) or 1.0
    return len(a) == len(b) and all(abs(x - y) <= rel * scale for x, y in zip(a, b))


@block_sim.needs_gxx
@pytest.mark.parametrize("name,sizes,out,warps", [
    ("softmax", {"rows": 37, "cols": 45}, "y", 4),
    ("gemv", {"rows": 70, "cols": 33}, "y", 2),
    ("layernorm", {"rows": 9, "cols": 100}, "y", 8),
])
def test_same_outputs_as_the_original_on_cpu(name, sizes, out, warps):
    ctx, kernel = _example(name)
    result = warp_per_row.apply(ctx, warps_per_block=warps)
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes)
    after = block_sim.run(result.source, kernel, ctx.spec, sizes, result.launch)
    for buf, values in before.buffers.items():
        if buf == out:
            assert _close(values, after.buffers[buf], 1e-5), buf
        else:
            assert after.buffers[buf] == values, buf  # inputs unchanged
    n = len(before.buffers[out]) - block_sim.GUARD
    assert 77 not in before.buffers[out][:n]
    assert after.buffers[out][n:] == [77] * block_sim.GUARD


def test_gridstride_form_loops_the_warps_over_the_rows():
    ctx, _ = _example("gemv")
    result = warp_per_row.apply(ctx, warps_per_block=4, gridstride=True)
    src = result.source
    assert ("    const unsigned int lane = threadIdx.x % 32u;\n"
            "    for (int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32u; row < rows; "
            "row += (gridDim.x * blockDim.x) / 32u) {\n"
            "        float acc = 0.0f;\n") in src
    assert "        if (lane == 0) y[row] = acc;\n    }\n}" in src
    assert "if (row >= rows) return;" not in src
    assert result.tags == ("warp-per-row+gridstride", "block=128")
    assert result.launch.grid == ("ceil_div(rows, 4)",)
    assert "also correct under any launch whose block is a multiple of 32" in result.explanation


@needs_nvcc
def test_every_gridstride_rewrite_compiles():
    sources = [warp_per_row.apply(_example(n)[0], warps_per_block=w, gridstride=True).source
               for n in ("softmax", "gemv", "layernorm") for w in (4, 8)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(compile_source, sources))
    for compiled in results:
        assert compiled.ok, compiled.stderr


@block_sim.needs_gxx
@pytest.mark.parametrize("name,sizes,out", [
    ("softmax", {"rows": 37, "cols": 45}, "y"),
    ("layernorm", {"rows": 300, "cols": 40}, "y"),
])
def test_gridstride_form_is_right_under_the_original_launch_and_the_plain_one_is_not(
        name, sizes, out):
    # The spec's own launch (one thread per row: ceil(rows / block) blocks) runs 1/32 of the
    # warps the plain form needs; the grid-stride form loops them over every row.
    ctx, kernel = _example(name)
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes)
    n = len(before.buffers[out]) - block_sim.GUARD
    for gridstride, launch in ((True, ctx.spec.launch), (True, None), (False, ctx.spec.launch)):
        result = warp_per_row.apply(ctx, warps_per_block=4, gridstride=gridstride)
        after = block_sim.run(result.source, kernel, ctx.spec, sizes, launch or result.launch)
        same = _close(before.buffers[out], after.buffers[out], 1e-5)
        assert same == gridstride, (gridstride, launch)
        if not gridstride:
            assert 77 in after.buffers[out][:n]  # rows no warp reached keep the poison
        assert after.buffers[out][n:] == [77] * block_sim.GUARD


SPEC = """
kernel k
size rows = 64
size cols = 32
scalar rows: int = rows
scalar cols: int = cols
in x: float[rows * cols]
out y: float[rows * cols]
block = 128
grid = ceil_div(rows, block.x)
"""

HEAD = """
__global__ void k(const float* x, float* y, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
"""


@pytest.mark.parametrize("body,reason", [
    ("float s = 1.0f;\nfor (int c = 0; c < cols; ++c) s += x[row * cols + c];\n"
     "for (int c = 0; c < cols; ++c) y[row * cols + c] = s;",
     "the sum s does not start from 0 (each lane would add its starting value once)"),
    ("for (int c = 0; c < cols; ++c) y[row * cols + c] = x[row * cols + c];\n"
     "for (int c = 1; c < cols; ++c) y[row * cols + c] += y[row * cols + c - 1];",
     "y is written, and 'y[row * cols + c]' (line 5) is not an access by the loop's column"),
    ("float* yr = y + row * cols;\nfor (int c = 1; c < cols; ++c) yr[c] = yr[c - 1] + x[c];",
     "y is written, and 'yr[c - 1]' (line 6) is not an access by the loop's column"),
    ("float s = 0.0f;\nfor (int c = 0; c < cols; ++c) { s += x[c]; if (s > 1.0f) break; }",
     "'break;' at line 6: the rows' work must run straight through"),
    ("float s = 0.0f;\nfor (int c = 0; c < cols; ++c) s = s * 0.5f + x[c];",
     "'s = s * 0.5f + x[c]' (line 6) changes s across columns but is not 'acc += value', "
     "'acc = fmaxf(acc, value)' or 'if (value > acc) acc = value'"),
    ("float s = 0.0f;\nfor (int c = 0; c < cols; c += 2) s += x[c];",
     "the loop at line 6 ('for (int c = 0; c < cols; c += 2) s += x[c];') is not 'for (int c = "
     "start; c < end; ++c)' over the row"),
    ("y[row] = x[row];",
     "no loop over the row's columns: each thread handles one element, not a row"),
    ("float s = 0.0f;\nfor (int c = 0; c < cols; ++c) { s += x[c]; y[c] = s; }",
     "s is read inside the loop at line 6 before the loop has finished it"),
    # combined after each loop, the first loop's total would be added once per lane
    ("float s = 0.0f;\nfor (int c = 0; c < cols; ++c) s += x[row * cols + c];\n"
     "for (int c = 0; c < cols; ++c) s += x[row * cols + c];\ny[row] = s;",
     "the sum s is accumulated in the loops at lines 6 and 7: combined across the lanes after "
     "the first, every lane would add the row's total again after the second"),
])
def test_rejected_kernels_say_why(body, reason):
    ctx = context_with_spec(HEAD + body + "\n}\n", "k", SPEC)
    assert warp_per_row.check(ctx) == reason
    with pytest.raises(PassNotApplicable, match=re.escape(f"warp_per_row on k: {reason}")):
        warp_per_row.apply(ctx)


def test_2d_block_is_rejected():
    ctx, _ = _example("softmax")
    spec = (EXAMPLES / "softmax.cu.spec").read_text().replace("block = 128", "block = 32, 4")
    assert warp_per_row.check(context_with_spec(ctx.text, "softmax_rows", spec)) == \
        "the spec's block (32, 4) is not 1D"


# A block per row (cudalens.optimizer.block_rows), read as one thread per row
VARIANTS = Path(__file__).resolve().parent / "data" / "variants" / "warp_per_row"


def _variant(name: str):
    from variant_corpus import Variant, context as variant_context

    return variant_context(Variant("warp_per_row", VARIANTS / name))


def test_a_block_per_row_softmax_becomes_a_warp_per_row_without_shared_memory():
    ctx = _variant("softmax_block_tree.cu")
    assert warp_per_row.check(ctx) is None
    result = warp_per_row.apply(ctx)
    src = result.source
    assert "__shared__" not in src and "__syncthreads" not in src and "cudalens" not in src
    assert "    int idx = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;\n" \
           "    const unsigned int lane = threadIdx.x % 32u;\n" \
           "    if (idx >= N) return;\n" in src  # on the line of 'int tid = threadIdx.x;' 
    assert src.count("for (int i = lane; i < C; i += 32) {") == 3
    assert "maxval = fmaxf(maxval, __shfl_xor_sync(0xffffffffu, maxval, offset1));" in src
    assert "    float offset = maxval;\n" in src and "    float sum = sumval;\n" in src
    assert (result.launch.block, result.launch.grid, result.launch.shared) == \
        (("128",), ("ceil_div((B * T), 4)",), "0")
    assert result.explanation.startswith(
        "one warp per idx instead of one block: each idx's partial results are combined "
        "across its warp with __shfl_xor_sync (maxval, sumval, 5 steps each) instead of trees "
        "in shared memory with a barrier per step, and a block of 128 threads takes 4 idxs")


def test_a_block_per_row_reached_through_blockidx_gets_a_row_index_and_guard():
    result = warp_per_row.apply(_variant("softmax_block_ptr_if.cu"))
    assert "    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;\n" \
           "    const unsigned int lane = threadIdx.x % 32u; if (row >= N) return;\n" in \
           result.source
    assert "const float* x = inp + (size_t)row * C;" in result.source
    assert "if (v > m) m = v;" in result.source
    assert "if (m_other > m) m = m_other;" in result.source  # the comparison across lanes


def test_the_block_per_row_of_the_spec_corpus_keeps_its_own_guard():
    from cudalens.optimizer.passes import launch_config

    target = load_target(Path(__file__).resolve().parent / "data" / "spec_corpus" /
                         "softmax_fwd.cu")
    ctx = make_context(target.text, str(target.path), target.kernel.name, target.spec)
    assert warp_per_row.check(ctx) is None and launch_config.check(ctx) is None
    result = warp_per_row.apply(ctx)
    assert result.source.count("if (row >= N) return;") == 1
    assert result.launch.grid == ("ceil_div(N, 4)",)


BLOCK_SPEC = """
kernel k
size N = 64
size C = 300
scalar N: int = N
scalar C: int = C
in x: float[N * C]
out y: float[N]
block = 128
grid = {grid}
shared = block.x * 4
"""

BLOCK_KERNEL = """
__global__ void k(const float* x, float* y, int N, int C) {{
    extern __shared__ float s[];
    int row = blockIdx.x;
    int tid = threadIdx.x;
    float acc = {start};
    for (int i = tid; i < C; i += blockDim.x) acc {update};
    s[tid] = acc;
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st /= 2) {{
        if (tid < st) s[tid] {combine};
        __syncthreads();
    }}
    {final}
}}
"""


@pytest.mark.parametrize("grid,start,update,combine,final,reason,line", [
    ("N", "0.0f", "+= x[row * C + i]", "+= s[tid + st]", "if (tid == 0) y[row] = s[0];",
     None, None),
    ("N", "0.0f", "+= x[row * C + i]", "= fmaxf(s[tid], s[tid + st])",
     "if (tid == 0) y[row] = s[0];",
     "the tree at line 10 combines acc by fmaxf, but the loop at line 7 accumulates it by sum",
     10),
    ("N", "0.0f", "+= x[row * C + i]", "+= s[tid + st]", "if (tid == 0) y[row] = s[0] + acc;",
     "acc is used at line 14 after it is stored for the tree at line 8 (each thread's partial "
     "value)", 14),
    ("64", "0.0f", "+= x[row * C + i]", "+= s[tid + st]", "if (tid == 0) y[row] = s[0];",
     "no guard 'if (row >= rows) return;' and no scalar parameter the spec sets to the grid's "
     "row count (64): the rows of a warp per row need their count", None),
    ("N", "-INFINITY", "= fmaxf(acc, x[row * C + i])", "= fmaxf(s[tid], s[tid + st])",
     "if (tid == 0) y[row] = s[0];", None, None),
])
def test_a_block_per_row_is_read_as_one_thread_per_row_or_says_why(
        grid, start, update, combine, final, reason, line):
    from cudalens.optimizer.passes import block_per_row
    from cudalens.optimizer.reasons import line_of

    text = BLOCK_KERNEL.format(start=start, update=update, combine=combine, final=final)
    ctx = context_with_spec(text, "k", BLOCK_SPEC.format(grid=grid))
    got = warp_per_row.check(ctx)
    assert got == reason and line_of(got) == line
    if reason is not None:
        assert block_per_row.check(ctx) == reason
    else:
        assert "if (lane == 0) y[row] = acc;" in warp_per_row.apply(ctx).source
