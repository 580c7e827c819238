"""A maximum or minimum written as a comparison (``cudalens.optimizer.minmax``) through the
reduction passes.

``match`` reads the spellings public kernels use (``if (x > m) m = x;``, braces, the
ternary both ways, the operands swapped) as the right direction, max or min, and refuses
look-alikes (another value assigned than compared, an ``else``, the target in the value).
The row passes (``warp_per_row``, ``block_per_row`` and the online softmax fusion) and the
tree passes (``warp_reduce``, ``coarsen_reduce``) accept them and combine with the same
comparison, a shuffle stored in a constant first; on the CPU block simulator the rewrite of
an ``if (v > m) m = v;`` row maximum gives the original's bits, NaN inputs included.
"""

from __future__ import annotations

import math

import pytest

from cudalens.kernel_model.syntax import parse, walk
from cudalens.optimizer import minmax
from cudalens.optimizer.passes import block_per_row, coarsen_reduce, warp_per_row, warp_reduce
from cudalens.optimizer.row_group import online_pair
from cudalens.spec.model import BufferDecl

import block_sim
from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec


def _statement(text: str):
    """The first ``if`` or expression statement of ``text`` put into a function body."""
    p = parse(f"__device__ void f(float* x, float m, float v) {{\n{text}\n}}\n")
    body = next(n for n in walk(p.tree.root_node) if n.type == "compound_statement")
    return p, [c for c in body.named_children if c.type != "comment"][0]


@pytest.mark.parametrize("text,kind,target,value", [
    ("if (x[j] > m) m = x[j];", "if>", "m", "x[j]"),
    ("if (v > m) { m = v; }", "if>", "m", "v"),
    ("if (m < v) m = v;", "if>", "m", "v"),
    ("if (v >= m) m = v;", "if>=", "m", "v"),
    ("m = (v > m) ? v : m;", "if>", "m", "v"),
    ("m = m < v ? v : m;", "if>", "m", "v"),
    ("m = (m > v) ? m : v;", "keep<", "m", "v"),  # keeps m unless v is not below it: max
    ("m = (v < m) ? m : v;", "keep<", "m", "v"),
    ("if (v < m) m = v;", "if<", "m", "v"),
    ("m = (m < v) ? m : v;", "keep>", "m", "v"),  # min
    ("m = (v > m) ? m : v;", "keep>", "m", "v"),  # looks like a max, is a min
    ("if (x[j + 1] > x[j]) x[j] = x[j + 1];", "if>", "x[j]", "x[j + 1]"),
])
def test_spellings_read_as_their_direction(text, kind, target, value):
    p, stmt = _statement(text)
    got = minmax.match(stmt, p)
    assert got is not None
    assert (got.kind, p.text_of(got.target), p.text_of(got.value)) == (kind, target, value)
    assert minmax.is_max(kind) == (kind in minmax.MAX_KINDS)
    assert minmax.is_min(kind) != minmax.is_max(kind)


@pytest.mark.parametrize("text", [
    "if (v > m) m = x[0];",          # assigns another value than it compares
    "if (v > m) m = v; else m = 0;",  # an else
    "if (v > m) { m = v; v = 0; }",   # more than the assignment
    "if (m + v > m) m = m + v;",      # the value reads the target
    "m = (v > m) ? v : x[0];",        # neither arm is the target
    "m = (v == m) ? v : m;",          # not an ordering
    "m += (v > m) ? v : m;",          # not a plain assignment
])
def test_look_alikes_are_not_read(text):
    p, stmt = _statement(text)
    assert minmax.match(stmt, p) is None


def _step(kind: str, acc: float, other: float) -> float:
    """One combine step of ``kind`` as the C statement ``combine_lines`` writes behaves."""
    op = kind[2:] if kind.startswith("if") else kind[4:]
    holds = {">": other > acc, ">=": other >= acc, "<": other < acc, "<=": other <= acc}[op]
    if kind.startswith("if"):
        return other if holds else acc
    return acc if holds else other


def test_every_kind_is_its_direction_on_values_without_nan():
    import random
    rng = random.Random(5)
    for kind in minmax.CONDITIONAL:
        for _ in range(50):
            xs = [rng.choice([-2.0, -1.0, 0.5, 3.0, 7.25]) for _ in range(rng.randint(1, 9))]
            acc = xs[0]
            for x in xs[1:]:
                acc = _step(kind, acc, x)
            assert acc == (max(xs) if minmax.is_max(kind) else min(xs)), (kind, xs)


def test_nan_is_skipped_by_the_if_kinds_and_taken_by_the_keep_kinds():
    nan = float("nan")
    for kind in ("if>", "if>=", "if<", "if<="):
        assert _step(kind, 1.0, nan) == 1.0
    for kind in ("keep<", "keep<=", "keep>", "keep>="):
        assert math.isnan(_step(kind, 1.0, nan))


def test_combine_lines_keep_the_comparison_and_store_a_shuffle_first():
    shfl = "__shfl_xor_sync(0xffffffffu, m, offset)"
    assert minmax.combine_lines("m", "if>", shfl, ("float", "o")) == [
        f"const float o = {shfl};", "if (o > m) m = o;"]
    assert minmax.combine_lines("m", "keep<", "w[1]") == ["m = (w[1] < m) ? m : w[1];"]
    assert minmax.combine_lines("m", "fmaxf", shfl, ("float", "o")) == [f"m = fmaxf(m, {shfl});"]
    assert minmax.combine_lines("s", "+", "t") == ["s += t;"]
    assert minmax.combine_text("m", "if<=", "q", ("double", "o")) == \
        "{ const double o = q; if (o <= m) m = o; }"
    assert minmax.select("if>", "m", "mo") == "(mo > m) ? mo : m"
    assert minmax.select("keep>=", "m", "mo") == "(mo >= m) ? m : mo"
    with pytest.raises(ValueError, match="expected a max or min combine kind, found '\\+'"):
        minmax.select("+", "a", "b")
    assert minmax.label("if>") == "max (if (x > m) m = x)"
    assert minmax.label("keep>") == "min (m = (x > m) ? m : x)"


ROW_SPEC = """
kernel rowmax
size rows = 64
size cols = 48
scalar rows: int = rows
scalar cols: int = cols
in x: float[rows * cols] range(-1, 1)
out y: float[rows]
block = 128
grid = ceil_div(rows, block.x)
"""

# a row maximum; inputs above 0.5 become NaN, which 'if (v > m) m = v' skips
ROW_MAX = """
__global__ void rowmax(const float* x, float* y, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) {
        float v = x[r * cols + c] > 0.5f ? NAN : x[r * cols + c];
        %s
    }
    y[r] = m;
}
"""


def test_warp_per_row_combines_an_if_max_with_its_comparison():
    ctx = context_with_spec(ROW_MAX % "if (v > m) m = v;", "rowmax", ROW_SPEC)
    assert warp_per_row.check(ctx) is None
    result = warp_per_row.apply(ctx)
    assert "        const float m_other = __shfl_xor_sync(0xffffffffu, m, offset);\n" \
           "        if (m_other > m) m = m_other;\n" in result.source
    assert "fmaxf" not in result.source
    assert minmax.NAN_CAVEAT in result.explanation


@block_sim.needs_gxx
def test_if_max_rewrite_gives_the_originals_bits_with_nan_inputs():
    """'if (v > m) m = v' skips a NaN in every lane and in every shuffle step, so the warp's
    maximum is the thread's, bit for bit, with NaNs among the inputs (about 1 in 4)."""
    ctx = context_with_spec(ROW_MAX % "if (v > m) m = v;", "rowmax", ROW_SPEC)
    sizes = {"rows": 37, "cols": 45}
    before = block_sim.run(ctx.text, "rowmax", ctx.spec, sizes)
    for params in ({"warps_per_block": 4}, {"warps_per_block": 2, "gridstride": True}):
        result = warp_per_row.apply(ctx, **params)
        after = block_sim.run(result.source, "rowmax", ctx.spec, sizes, result.launch)
        assert before.buffers["y"][:37] == after.buffers["y"][:37], params
    assert all(not math.isnan(v) for v in before.buffers["y"][:37])  # NaNs were skipped
    # ... and there were NaNs: the select that takes a NaN leaves some rows NaN
    taking = context_with_spec(ROW_MAX % "m = (m > v) ? m : v;", "rowmax", ROW_SPEC)
    assert any(math.isnan(v) for v in
               block_sim.run(taking.text, "rowmax", taking.spec, sizes).buffers["y"][:37])


def test_row_passes_refuse_a_comparison_that_is_not_a_max():
    ctx = context_with_spec(ROW_MAX % "if (v > m) m = v + 1.0f;", "rowmax", ROW_SPEC)
    assert warp_per_row.check(ctx) == (
        "'m = v + 1.0f' (line 9) changes m across columns but is not 'acc += value', "
        "'acc = fmaxf(acc, value)' or 'if (value > acc) acc = value'")


SOFTMAX_SPEC = """
kernel softmax
size rows = 8
size cols = 2048
scalar rows: int = rows
scalar cols: int = cols
in x: float[rows * cols] range(-8, 8)
out y: float[rows * cols]
block = 128
grid = ceil_div(rows, block.x)
"""

SOFTMAX = """
__global__ void softmax(const float* x, float* y, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) %s
    float s = 0.0f;
    for (int c = 0; c < cols; ++c) s += expf(xr[c] - m);
    for (int c = 0; c < cols; ++c) yr[c] = expf(xr[c] - m) / s;
}
"""


@pytest.mark.parametrize("max_stmt,kind,merge", [
    ("if (xr[c] > m) m = xr[c];", "if>", "(m_other > m) ? m_other : m"),
    ("{ if (m < xr[c]) { m = xr[c]; } }", "if>", "(m_other > m) ? m_other : m"),
    ("m = (m > xr[c]) ? m : xr[c];", "keep<", "(m_other < m) ? m : m_other"),
])
def test_online_softmax_fuses_a_comparison_max(max_stmt, kind, merge):
    ctx = warp_per_row.normalize(context_with_spec(SOFTMAX % max_stmt, "softmax", SOFTMAX_SPEC))
    _, m = warp_per_row._plan(ctx)
    pair = online_pair(m)
    assert (pair.m, pair.s, pair.value, pair.max) == ("m", "s", "xr[c]", kind)
    assert {"block": 256, "online": True} in block_per_row.parameter_space(ctx)
    result = block_per_row.apply(ctx, block=256, online=True)
    assert f"const float m_new = {merge};" in result.source
    assert "online softmax" in result.explanation and minmax.NAN_CAVEAT in result.explanation


@block_sim.needs_gxx
def test_online_softmax_of_a_comparison_max_computes_the_softmax():
    ctx = context_with_spec(SOFTMAX % "if (xr[c] > m) m = xr[c];", "softmax", SOFTMAX_SPEC)
    sizes = {"rows": 3, "cols": 1100}
    before = block_sim.run(ctx.text, "softmax", ctx.spec, sizes)
    for p, params in ((block_per_row, {"block": 128, "online": True}),
                      (warp_per_row, {"warps_per_block": 2, "online": True})):
        result = p.apply(ctx, **params)
        after = block_sim.run(result.source, "softmax", ctx.spec, sizes, result.launch)
        n = 3 * 1100
        assert all(math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7) for a, b in
                   zip(before.buffers["y"][:n], after.buffers["y"][:n])), params


TREE_SPEC = """
kernel tree
size n = 100000
scalar n: int = n
in x: float[n] range(-100, 100)
out out: float[ceil_div(n, 256)]
block = 256
grid = ceil_div(n, 256)
shared = 256 * 4
"""

TREE = """
__global__ void tree(const float* x, float* out, int n)
{
    extern __shared__ float s[];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? x[i] : %s;
    __syncthreads();
    for (unsigned int st = blockDim.x / 2; st > 0; st >>= 1) {
        if (t < st) %s
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
"""

TREES = [
    ("-INFINITY", "{ if (s[t + st] > s[t]) s[t] = s[t + st]; }", "if>"),
    ("-INFINITY", "s[t] = (s[t] > s[t + st]) ? s[t] : s[t + st];", "keep<"),
    ("INFINITY", "if (s[t] > s[t + st]) s[t] = s[t + st];", "if<"),
]


@pytest.mark.parametrize("identity,combine,kind", TREES)
def test_tree_passes_read_a_comparison_combine(identity, combine, kind):
    ctx = context_with_spec(TREE % (identity, combine), "tree", TREE_SPEC)
    assert warp_reduce.check(ctx) is None and coarsen_reduce.check(ctx) is None
    _, m, _ = warp_reduce._plan(ctx)
    assert m.combine == kind
    shfl = "__shfl_down_sync(0xffffffffu, v, offset)"
    want = minmax.combine_lines("v", kind, shfl, ("float", "other"))
    assert "\n".join(f"        {x}" for x in want) in warp_reduce.apply(ctx).source
    coarse = coarsen_reduce.apply(ctx)
    assert f"float acc = {identity};" in coarse.source
    assert minmax.label(kind) in coarse.explanation and minmax.NAN_CAVEAT in coarse.explanation


@needs_nvcc
def test_tree_rewrites_of_comparison_combines_compile():
    sources = []
    for identity, combine, _ in TREES:
        ctx = context_with_spec(TREE % (identity, combine), "tree", TREE_SPEC)
        sources += [warp_reduce.apply(ctx).source, coarsen_reduce.apply(ctx).source]
    failed = [r.stderr[:600] for r in map(compile_source, sources) if not r.ok]
    assert not failed, failed


@block_sim.needs_gxx
@pytest.mark.parametrize("identity,combine,kind", TREES)
def test_tree_rewrites_of_comparison_combines_keep_the_block_values(identity, combine, kind):
    ctx = context_with_spec(TREE % (identity, combine), "tree", TREE_SPEC)
    sizes = {"n": 1000}
    before = block_sim.run(ctx.text, "tree", ctx.spec, sizes)
    outputs = [d.name for d in ctx.spec.params if isinstance(d, BufferDecl) and d.role == "out"]
    for result in (warp_reduce.apply(ctx), coarsen_reduce.apply(ctx)):
        after = block_sim.run(result.source, "tree", ctx.spec, sizes, result.launch)
        for name in outputs:
            assert after.buffers[name] == before.buffers[name], (kind, result.tags)
