"""The rewrites read like hand-written code: for every pass on every example, and for every
recorded built-in winner, the rewritten kernel is within ``RATIO_BOUND`` (1.5x) of the
hand-written version's non-blank lines (``benchmarks/rewrite_lines.py``), carries no helper
types, banners or 64-bit indices (counters, subscripts) the spec's sizes do not need, and compiles with the real
nvcc (as do the hand-written versions)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from nvcc_util import compile_source, needs_nvcc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import rewrite_lines as rl  # noqa: E402

PASS_ROWS = rl.pass_rows()
WINNERS, MISSING = rl.winner_rows()
ROWS = PASS_ROWS + WINNERS
HAND_FILES = sorted(rl.HANDWRITTEN.glob("*.cu"))


def _id(row: rl.Row) -> str:
    return f"{row.example}-{row.what}".replace(" ", "_")


def test_every_structural_rewrite_of_an_example_has_a_hand_written_version():
    structural = {(r.example, r.what) for r in PASS_ROWS if r.what in rl.BODY_PASSES}
    assert structural  # vectorize_gridstride, gridstride, tiled_*, warp_* apply to examples
    missing = [f"{e}.{p}.cu" for e, p in sorted(structural) if rl.hand_file(e, p) is None]
    assert not missing, f"no hand-written version in benchmarks/handwritten: {missing}"


def test_every_recorded_winner_is_proposed_again():
    assert len(WINNERS) >= 8
    assert not MISSING, f"recorded winners the search no longer proposes: {MISSING}"


@pytest.mark.parametrize("row", ROWS, ids=_id)
def test_rewrite_is_within_the_bound_of_the_hand_written_line_count(row):
    assert row.ratio <= rl.RATIO_BOUND, (
        f"{row.example} {row.what}: {row.rewrite} lines against {row.hand} hand-written "
        f"({row.hand_file or 'the original kernel'}): {row.ratio:.2f}x > {rl.RATIO_BOUND}x")


@pytest.mark.parametrize("row", ROWS, ids=_id)
def test_rewrite_has_no_helper_types_banners_or_needless_wide_indices(row):
    kernel = rl.kernel_text(row.source, rl.context_of(rl.EXAMPLES / f"{row.example}.cu")
                            .kernel.name)

    assert not re.search(r"\bstruct\b", kernel), f"{row.what}: defines a helper type"
    # every example's sizes fit int (2^25 elements at most), so no 64-bit counters or
    # subscripts appear (a once-per-tile bounds test may compare in 64 bits: sums of an
    # index and a size cannot wrap there, optimizer/interior.py)
    wide = (re.search(r"\b(long long|int64_t|size_t)\s+\w+\s*[=;,]", kernel) or
            re.search(r"\[[^\]]*\b(long long|int64_t)\b", kernel))
    assert not wide, f"{row.what}: 64-bit index the spec's sizes do not need: {wide.group(0)!r}"
    assert "cudalens" not in kernel, f"{row.what}: a 'cudalens' banner in the kernel"
    comments = [line for line in kernel.splitlines() if line.strip().startswith("//")]
    ctx = rl.context_of(rl.EXAMPLES / f"{row.example}.cu")
    original = rl.kernel_text(ctx.text, ctx.kernel.name)
    added = len(comments) - sum(1 for l in original.splitlines() if l.strip().startswith("//"))
    assert added <= 2, f"{row.what}: {added} comment lines added, expected one short comment"


@needs_nvcc
@pytest.mark.parametrize("row", ROWS, ids=_id)
def test_rewrite_compiles_with_nvcc(row):
    compiled = compile_source(row.source)
    assert compiled.ok, f"{row.example} {row.what}: {compiled.stderr}"


@needs_nvcc
@pytest.mark.parametrize("path", HAND_FILES, ids=lambda p: p.stem)
def test_hand_written_version_compiles_with_nvcc(path):
    compiled = compile_source(path.read_text(encoding="utf-8"))
    assert compiled.ok, f"{path.name}: {compiled.stderr}"


def test_table_lists_every_row_with_its_ratio():
    text = rl.table(ROWS)
    saxpy = next(r for r in PASS_ROWS if r.example == "saxpy" and r.what == "vectorize_gridstride")
    line = next(l for l in text.splitlines() if l.startswith("saxpy") and
                "vectorize_gridstride" in l and "winner" not in l)
    assert line.split()[2:7] == [str(saxpy.added), str(saxpy.original), str(saxpy.rewrite),
                                 str(saxpy.hand), f"{saxpy.ratio:.2f}"]
    assert len(text.splitlines()) == len(ROWS) + 2
