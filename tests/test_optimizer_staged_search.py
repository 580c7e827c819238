"""The candidate search (``cudalens.optimizer.staged_search``) and the candidate data class."""

from __future__ import annotations

import pytest

from cudalens.optimizer.candidate import launch_key, make_label
from cudalens.optimizer.staged_search import ordered, preconditions, propose
from cudalens.source.parser import parse_source

from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context

# saxpy: restrict_const applies or not (2) x body: unchanged, vectorized with 5 grid choices
# or scalar grid-stride with 4 (10) x block: the spec's or 4 others (5), minus the baseline.
SAXPY_TOTAL = 2 * 10 * 5 - 1


def _summary(cands):
    return [(c.label, c.source, launch_key(c.launch), c.passes) for c in cands]


def test_all_combinations_when_the_budget_allows():
    cands = propose(context("elementwise.cu", "saxpy"), budget=1000, seed=0)
    assert len(cands) == SAXPY_TOTAL
    assert len({c.key for c in cands}) == SAXPY_TOTAL


@pytest.mark.parametrize("budget", [0, 1, 5, 24])
def test_budget_is_respected(budget):
    assert len(propose(context("elementwise.cu", "saxpy"), budget=budget, seed=3)) == budget


def test_negative_budget():
    with pytest.raises(ValueError, match="budget must be >= 0, found -1"):
        propose(context("elementwise.cu", "saxpy"), budget=-1, seed=0)


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_deterministic_for_a_seed(seed):
    ctx = context("elementwise.cu", "saxpy")
    assert _summary(propose(ctx, budget=24, seed=seed)) == \
        _summary(propose(context("elementwise.cu", "saxpy"), budget=24, seed=seed))


def test_seeds_reorder_only_the_non_default_candidates():
    ctx = context("elementwise.cu", "saxpy")
    a = propose(ctx, budget=1000, seed=1)
    b = propose(ctx, budget=1000, seed=2)
    assert {c.key for c in a} == {c.key for c in b}
    assert [c.label for c in a] != [c.label for c in b]
    # the default-parameter combinations come first, longest first, whatever the seed
    defaults = ["restrict vec4+gridstride block=512 grid=8*SMs",
                "restrict gridstride block=512 grid=8*SMs"]
    assert [c.label for c in a[:2]] == defaults == [c.label for c in b[:2]]


def test_baseline_is_never_a_candidate():
    ctx = context("elementwise.cu", "saxpy")
    cands = propose(ctx, budget=1000, seed=0)
    assert (ctx.text, launch_key(ctx.launch), ()) not in {c.key for c in cands}
    # the spec's own block appears only together with a source change
    assert all(c.source != ctx.text for c in cands if c.launch.block == ctx.launch.block)


def test_candidate_fields():
    ctx = context("elementwise.cu", "saxpy")
    first = propose(ctx, budget=1, seed=0)[0]
    assert first.label == "restrict vec4+gridstride block=512 grid=8*SMs"
    assert first.passes == ("restrict_const", "vectorize_gridstride", "launch_config")
    assert first.kernel == "saxpy"
    assert first.launch.block == ("512",)
    assert first.launch.grid == ("min(ceil_div(n, block.x * 4), sm_count * 8)",)
    assert first.options == ()
    assert "\n" not in first.explanation
    assert first.explanation.count("; ") >= 2
    assert "16-byte vectorized loads/stores (4 x float per access)" in first.explanation
    new = parse_source(first.source, "x.cu").kernel("saxpy")
    assert [p.name for p in new.parameters] == ["n", "a", "x", "y"]
    assert "float* __restrict__ y" in first.source


def test_make_label_orders_block_before_grid():
    assert make_label(("restrict", "vec4+gridstride", "grid=8*SMs", "block=512")) == \
        "restrict vec4+gridstride block=512 grid=8*SMs"
    assert make_label(("block=128", "block=512")) == "block=512"


ALL_PASSES = ["restrict_const", "tiled_transpose", "tiled_matmul", "warp_reduce",
              "warp_per_row", "vectorize_gridstride", "gridstride", "unroll", "fast_math",
              "launch_config", "launch_bounds"]


def test_preconditions_name_every_pass():
    # Changed deliberately with the structural, unrolling, fast-math and launch-bounds passes:
    # every pass is listed, in PASSES order, with its reason when it does not apply.
    saxpy = preconditions(context("elementwise.cu", "saxpy"))
    assert [name for name, _ in saxpy] == ALL_PASSES
    applies = {name for name, reason in saxpy if reason is None}
    assert applies == {"restrict_const", "vectorize_gridstride", "gridstride", "launch_config",
                       "launch_bounds"}
    reasons = dict(saxpy)
    assert reasons["unroll"] == "kernel saxpy has no for loop"
    assert reasons["warp_reduce"] == ("the kernel declares no __shared__ array: not a "
                                      "shared-memory reduction")
    assert reasons["tiled_transpose"].startswith("expected the body to start with the two "
                                                 "global indices")
    result = dict(preconditions(context("rejects.cu", "escapes")))
    assert list(result) == ALL_PASSES
    assert all(reason for name, reason in result.items() if name != "launch_bounds")
    assert result["launch_config"].startswith("the spec's grid (4096 / 256) does not depend")


def test_nothing_to_propose():
    assert propose(context("rejects.cu", "escapes"), budget=10, seed=0) == []


def test_2d_kernel_candidates():
    cands = propose(context("rejects.cu", "transpose"), budget=100, seed=0)
    labels = {c.label for c in cands}
    assert "block=32x8" in labels and "restrict block=64x4" in labels
    assert not any("gridstride" in l for l in labels)
    # Changed deliberately with the tiled transpose: restrict_const (2) x (the spec's 16x16
    # block and 5 others, or the tiled transpose with 4 block heights), minus the baseline.
    assert len(cands) == 2 * (6 + 4) - 1
    assert {c.label for c in cands if "tiled-transpose" in c.label} == {
        f"{r}tiled-transpose block=32x{h}" for r in ("", "restrict ") for h in (4, 8, 16, 32)}
    # the tiled structure comes first: it is the body rewrite
    assert [c.label for c in cands[:2]] == ["restrict tiled-transpose block=32x8",
                                           "tiled-transpose block=32x8"]


@needs_nvcc
@pytest.mark.parametrize("file,kernel", [("elementwise.cu", "saxpy"), ("elementwise.cu", "scale"),
                                         ("rejects.cu", "relu_masked"), ("rejects.cu", "transpose")])
def test_every_candidate_source_compiles(file, kernel):
    sources = {c.source for c in propose(context(file, kernel), budget=1000, seed=0)}
    assert sources
    for source in sources:
        compiled = compile_source(source)
        assert compiled.ok, compiled.stderr


def _example_ctx(name):
    from pathlib import Path

    from cudalens.optimizer.context import make_context
    from cudalens.target import load_target
    target = load_target(Path(__file__).resolve().parent.parent / "examples" / f"{name}.cu")
    return make_context(target.text, str(target.path), target.kernel.name, target.spec)


@pytest.mark.parametrize("name,first", [
    ("transpose", "restrict tiled-transpose block=32x8"),
    ("reduce_sum", "restrict warp-reduce"),
    ("reduce_max", "restrict warp-reduce"),
    ("matmul", "restrict tiled-matmul tile=32x4 block=32x8"),
    ("softmax", "restrict warp-per-row unroll=4 block=128"),
    ("gemv", "restrict warp-per-row unroll=4 block=128"),
    ("stencil1d", "restrict unroll block=512"),
])
def test_structural_rewrites_lead_the_examples(name, first):
    cands = propose(_example_ctx(name), budget=24, seed=0)
    assert cands[0].label == first
    assert cands[0].family == " ".join(t for t in first.split() if "=" not in t)


def test_exact_families_before_approximate_ones_and_options_carried():
    cands = ordered(_example_ctx("softmax"), seed=0)
    reps, seen = [], set()
    for c in cands:
        if c.family not in seen:
            seen.add(c.family)
            reps.append(c)
    assert [c.family for c in reps] == [
        "restrict warp-per-row", "warp-per-row", "restrict warp-per-row intrinsics",
        "restrict warp-per-row fastmath", "warp-per-row intrinsics", "warp-per-row fastmath",
        "restrict", "", "restrict intrinsics", "restrict fastmath", "intrinsics", "fastmath"]
    fast = [c for c in cands if "fastmath" in c.family]
    assert fast and all(c.options == ("-use_fast_math",) for c in fast)
    assert all(c.options == () for c in cands if "fastmath" not in c.family)
    assert all("not exact" in c.explanation for c in cands if "fastmath" in c.family
               or "intrinsics" in c.family)


def test_structural_pool_is_deterministic_per_seed():
    ctx = _example_ctx("softmax")
    a, b, c = ordered(ctx, 1), ordered(ctx, 1), ordered(ctx, 2)
    assert _summary(a) == _summary(b)
    assert {x.key for x in a} == {x.key for x in c}
    n_families = len({x.family for x in a})
    assert [x.label for x in a[:n_families]] == [x.label for x in c[:n_families]]
    assert [x.label for x in a] != [x.label for x in c]
