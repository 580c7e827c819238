"""The candidate search's general properties (``cudalens.optimizer.staged_search``: budget,
determinism, the baseline never proposed, every source compiling) and the candidate data class.
Its own ordering is tested in ``test_optimizer_staged_search.py``."""

from __future__ import annotations

import pytest

from cudalens.optimizer.candidate import launch_key, make_label
from cudalens.optimizer import staged_search
from cudalens.source.parser import parse_source

from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context

# saxpy: restrict_const applies or not (2) x body: unchanged, vectorized with 5 grid choices
# or scalar grid-stride with 4 (10) x block: the spec's or 4 others (5), minus the baseline.
SAXPY_TOTAL = 2 * 10 * 5 - 1


@pytest.fixture()
def propose():
    return staged_search.propose


def _summary(cands):
    return [(c.label, c.source, launch_key(c.launch), c.passes) for c in cands]


def test_all_combinations_when_the_budget_allows(propose):
    cands = propose(context("elementwise.cu", "saxpy"), budget=1000, seed=0)
    assert len(cands) == SAXPY_TOTAL
    assert len({c.key for c in cands}) == SAXPY_TOTAL


@pytest.mark.parametrize("budget", [0, 1, 5, 24])
def test_budget_is_respected(propose, budget):
    assert len(propose(context("elementwise.cu", "saxpy"), budget=budget, seed=3)) == budget


def test_negative_budget(propose):
    with pytest.raises(ValueError, match="budget must be >= 0, found -1"):
        propose(context("elementwise.cu", "saxpy"), budget=-1, seed=0)


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_deterministic_for_a_seed(propose, seed):
    ctx = context("elementwise.cu", "saxpy")
    assert _summary(propose(ctx, budget=24, seed=seed)) == \
        _summary(propose(context("elementwise.cu", "saxpy"), budget=24, seed=seed))


def test_seeds_reorder_only_the_non_default_candidates(propose):
    ctx = context("elementwise.cu", "saxpy")
    a = propose(ctx, budget=1000, seed=1)
    b = propose(ctx, budget=1000, seed=2)
    assert {c.key for c in a} == {c.key for c in b}
    assert [c.label for c in a] != [c.label for c in b]
    # the default-parameter combinations come first, longest first, whatever the seed
    defaults = ["restrict vec4+gridstride block=512 grid=8*SMs",
                "restrict gridstride block=512 grid=8*SMs"]
    assert [c.label for c in a[:2]] == defaults == [c.label for c in b[:2]]


def test_baseline_is_never_a_candidate(propose):
    ctx = context("elementwise.cu", "saxpy")
    cands = propose(ctx, budget=1000, seed=0)
    assert (ctx.text, launch_key(ctx.launch), ()) not in {c.key for c in cands}
    assert all(len(c.key) == 3 for c in cands)
    # the spec's own block appears only together with a source change
    assert all(c.source != ctx.text for c in cands if c.launch.block == ctx.launch.block)


def test_candidate_fields(propose):
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


def test_nothing_to_propose(propose):
    assert propose(context("rejects.cu", "escapes"), budget=10, seed=0) == []


@needs_nvcc
@pytest.mark.parametrize("file,kernel", [("elementwise.cu", "saxpy"), ("elementwise.cu", "scale"),
                                         ("rejects.cu", "relu_masked"), ("rejects.cu", "transpose")])
def test_every_candidate_source_compiles(propose, file, kernel):
    sources = {c.source for c in propose(context(file, kernel), budget=1000, seed=0)}
    assert sources
    for source in sources:
        compiled = compile_source(source)
        assert compiled.ok, compiled.stderr
