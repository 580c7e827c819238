"""The variant corpus: ``cudalens plan`` proposes each kernel's pass, every candidate with
that pass compiles with nvcc, and where ``block_sim`` can run the kernel on the CPU the
rewrite computes the original's outputs.

Kernels the passes do not recognize yet are listed in ``MISSES`` with the reason ``plan``
gives; a miss that starts firing fails its test, so the list stays true.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import pytest

from cudalens.optimizer.passes import PASSES, get
from cudalens.optimizer.plan import make_plan
from cudalens.optimizer.staged_search import ordered
from cudalens.spec.model import BufferDecl

import block_sim
from nvcc_util import compile_source, needs_nvcc
from variant_corpus import context, sim_sizes, variants

# variant id -> the start of the reason its pass gives, and the line it names
MISSES = {
}

VARIANTS = variants()
HITS = [v for v in VARIANTS if v.id not in MISSES]
IDS = lambda vs: [v.id for v in vs]


def test_corpus_has_five_spellings_per_pattern():
    per = {}
    for v in VARIANTS:
        per.setdefault(v.pass_name, []).append(v)
    assert {"tiled_matmul", "tiled_transpose", "vectorize_gridstride", "warp_per_row",
            "warp_reduce", "hist_privatize", "coarsen_reduce", "column_reduce"} <= set(per)
    assert set(per) <= {p.name for p in PASSES}, "a corpus folder not named after a pass"
    assert all(len(vs) >= 5 for vs in per.values()), {k: len(v) for k, v in per.items()}


@pytest.mark.parametrize("v", HITS, ids=IDS(HITS))
def test_plan_proposes_the_pass(v):
    plan = make_plan(context(v))
    with_pass = [c for c in plan.candidates if v.pass_name in c.passes]
    assert with_pass, [n for n in plan.not_applied if n.pass_name == v.pass_name]
    assert v.pass_name not in {n.pass_name for n in plan.not_applied}
    # the search measures a structure before tuning: the pass is in the first batch
    assert any(c.first_batch for c in with_pass)


@pytest.mark.parametrize("v", [v for v in VARIANTS if v.id in MISSES],
                         ids=IDS([v for v in VARIANTS if v.id in MISSES]))
def test_known_misses_say_why_and_where(v):
    plan = make_plan(context(v))
    [miss] = [n for n in plan.not_applied if n.pass_name == v.pass_name]
    start, line = MISSES[v.id]
    assert miss.reason.startswith(start), miss.reason
    assert (miss.line, miss.at_kernel) == (line, False)


@needs_nvcc
def test_every_rewrite_of_the_corpus_compiles():
    jobs = {}
    for v in HITS:
        for c in ordered(context(v), 0):
            if v.pass_name in c.passes:
                jobs.setdefault(c.source, f"{v.id}: {c.label}")
    assert len(jobs) >= len(HITS)
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(compile_source, jobs))
    failed = [(jobs[s], r.stderr[:600]) for s, r in zip(jobs, results) if not r.ok]
    assert not failed, failed


NARROW_TOLERANCE = {"half": 1e-2, "float16": 1e-2, "bfloat16": 2 ** -6, "bf16": 2 ** -6}


def _close(a, b, rel):
    return len(a) == len(b) and all(
        x == y or (isinstance(x, float) and math.isclose(x, y, rel_tol=rel, abs_tol=rel))
        for x, y in zip(a, b))


@block_sim.needs_gxx
@pytest.mark.parametrize("v", HITS, ids=IDS(HITS))
def test_rewrite_computes_the_originals_outputs_on_cpu(v):
    ctx = context(v)
    p = get(v.pass_name)
    sizes = sim_sizes(v, ctx)
    result = p.apply(ctx)  # the pass's default parameters
    kernel = ctx.kernel.qualified_name
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes)
    after = block_sim.run(result.source, kernel, ctx.spec, sizes, result.launch)
    outputs = [d.name for d in ctx.spec.params if isinstance(d, BufferDecl) and d.role != "in"]
    types = {d.name: d.type for d in ctx.spec.params if isinstance(d, BufferDecl)}
    for name, values in before.buffers.items():
        if name in outputs:
            # paired half intrinsics round once where the original rounded twice (__hfma2 for
            # a * x + y): within the spec's default tolerances (README, "Harness spec")
            rel = NARROW_TOLERANCE.get(types[name], 1e-5)
            assert _close(values, after.buffers[name], rel), name
            n = len(values) - block_sim.GUARD
            assert 77 not in values[:n] or v.pass_name == "warp_reduce", name
            assert after.buffers[name][n:] == values[n:], name  # guards untouched
        else:
            assert after.buffers[name] == values, name


ROW_SPEC = """
kernel k
size rows = 64
size cols = 48
scalar rows: int = rows
scalar cols: int = cols
in x: float[rows * cols]
out y: float[rows * cols]
block = 128
grid = ceil_div(rows, block.x)
"""

ROW_REJECTS = [
    # a column-strided write: y[c * rows + r] is not at a fixed offset from the column
    ("""
__global__ void k(const float* x, float* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    for (int c = 0; c < cols; ++c) y[c * rows + r] = 2.0f * x[r * cols + c];
}""", "y is written, and 'y[c * rows + r]' (line 5) is not an access by the loop's column", 5),
    # the offset uses a local that changes: not the same on every trip
    ("""
__global__ void k(const float* x, float* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    for (int c = 0; c < cols; ++c) { y[r * cols + c] = x[r * cols + c]; cols = cols - 1; }
}""", "y is written, and 'y[r * cols + c]' (line 5) is not an access by the loop's column", 5),
    # written at two different offsets from the column
    ("""
__global__ void k(const float* x, float* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    for (int c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c];
    for (int c = 0; c < cols; ++c) y[c] += 1.0f;
}""", "y is written, and 'y[r * cols + c]' (line 5) is not an access by the loop's column", 5),
]


@pytest.mark.parametrize("text,reason,line", ROW_REJECTS)
def test_row_pass_rejects_writes_lanes_could_share(text, reason, line):
    from cudalens.optimizer.passes import warp_per_row
    from cudalens.optimizer.reasons import line_of
    from optimizer_fixtures import context_with_spec

    got = warp_per_row.check(context_with_spec(text, "k", ROW_SPEC))
    assert got == reason and line_of(got) == line


def _sets_under_the_original_launch(v) -> tuple[dict, ...]:
    """Every parameter set of the first variant of each pass folder, the default of the
    others: each block and tile a pass offers runs at least once."""
    space = get(v.pass_name).parameter_space(context(v))
    first = next(u for u in VARIANTS if u.pass_name == v.pass_name)
    return space if v == first else space[:1]


@block_sim.needs_gxx
@pytest.mark.parametrize("v", HITS, ids=IDS(HITS))
def test_rewrite_under_the_original_launch_stays_in_range(v):
    """The drop-in check runs every candidate under the user's launch (docs/architecture.md,
    "Drop-in"): there, a rewrite may compute wrong results, but it must not read or write
    out of range (a fault on the GPU). Under the original kernel's grid and block, in
    ``block_sim``'s checked mode (AddressSanitizer around every buffer, shared array and the
    launch's dynamic shared bytes), at small ragged sizes."""
    ctx = context(v)
    p = get(v.pass_name)
    sizes = sim_sizes(v, ctx)
    kernel = ctx.kernel.qualified_name
    faults = []
    for params in _sets_under_the_original_launch(v):
        result = p.apply(ctx, **params)
        try:
            block_sim.run(result.source, kernel, ctx.spec, sizes, ctx.spec.launch, checked=True,
                          timeout=120)
        except block_sim.OutOfRange as exc:
            faults.append((" ".join(result.tags), str(exc)[-400:]))
    assert not faults, faults


@block_sim.needs_gxx
def test_checked_mode_reports_an_access_out_of_range():
    """The checked simulation catches what the GPU would fault on: a read one past a
    buffer (in its guard), far past it, and past the launch's dynamic shared bytes."""
    from optimizer_fixtures import context_with_spec

    spec = """
kernel k
size n = 40
scalar n: int = n
in x: float[n]
out y: float[n]
block = 32
grid = ceil_div(n, block.x)
shared = {shared}
"""
    body = {
        "guard": "if (i <= n) y[i < n ? i : 0] = x[i];",
        "far": "if (i < n) y[i] = x[i + 4096 * blockIdx.x];",
        "dynamic": "extern __shared__ float s[]; s[threadIdx.x] = 1.0f; if (i < n) y[i] = x[i];",
    }
    for what, stmt in body.items():
        text = (f"__global__ void k(const float* x, float* y, int n)\n{{\n"
                f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    {stmt}\n}}\n")
        ctx = context_with_spec(text, "k", spec.format(shared="16" if what == "dynamic" else "0"))
        with pytest.raises(block_sim.OutOfRange, match=r"READ of size 4|WRITE of size 4") as info:
            block_sim.run(text, "k", ctx.spec, {"n": 40}, checked=True)
        assert "kernel.cu:4" in str(info.value), (what, str(info.value))
    # in range everywhere: no report, the outputs as the plain simulation gives them
    text = ("__global__ void k(const float* x, float* y, int n)\n{\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = x[i];\n}\n")
    ctx = context_with_spec(text, "k", spec.format(shared="0"))
    checked = block_sim.run(text, "k", ctx.spec, {"n": 40}, checked=True)
    assert checked.buffers == block_sim.run(text, "k", ctx.spec, {"n": 40}).buffers
