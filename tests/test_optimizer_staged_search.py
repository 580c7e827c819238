"""The staged search's own ordering (``cudalens.optimizer.staged_search``): every pass, the 2D
kernel's pool, structural rewrites first. What both searches share is tested in
``test_optimizer_search.py``."""

from __future__ import annotations

import pytest

from cudalens.optimizer.candidate import launch_key
from cudalens.optimizer.staged_search import ordered, preconditions, propose

from optimizer_fixtures import context


def _summary(cands):
    return [(c.label, c.source, launch_key(c.launch), c.passes) for c in cands]


ALL_PASSES = ["restrict_const", "tiled_transpose", "regblock_matmul", "tiled_matmul",
              "warp_reduce", "block_per_row", "warp_per_row", "stencil_tile", "stencil_regs",
              "stencil2d_regs", "vectorize_2d",
              "vectorize_gridstride", "gridstride", "hist_privatize", "coarsen_reduce",
              "column_reduce", "unroll", "fast_math", "launch_config", "launch_bounds"]


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
    ("matmul", "restrict regblock-matmul tile=128x128x8 thread=8x8 block=16x16"),
    ("softmax", "restrict block-per-row+online unroll=4 block=256"),
    ("gemv", "restrict block-per-row unroll=4 block=256"),
    ("stencil1d", "restrict stencil-regs vec4 unroll block=512"),
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
    # rows of 1024 columns: a block per row first (online softmax first), then a warp per row;
    # each has its grid-stride twin, correct under any launch
    assert [c.family for c in reps[:8]] == [
        "restrict block-per-row+online", "restrict block-per-row",
        "restrict block-per-row+online+gridstride", "restrict block-per-row+gridstride",
        "restrict warp-per-row", "restrict warp-per-row+online",
        "restrict warp-per-row+gridstride", "restrict warp-per-row+online+gridstride"]
    approx = [i for i, c in enumerate(reps) if "intrinsics" in c.family or "fastmath" in c.family]
    exact_body = [i for i, c in enumerate(reps) if "per-row" in c.family and i not in approx]
    assert len(exact_body) == 16 and max(exact_body) < min(approx)
    assert [c.family for c in reps[-6:]] == ["restrict", "", "restrict intrinsics",
                                             "restrict fastmath", "intrinsics", "fastmath"]
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
