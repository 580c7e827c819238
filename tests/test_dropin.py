"""Drop-in or a new launch, from the optimize result to the table, the stored record and the
editor's wording (``cudalens.dropin``), with the launch-aware runner double in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalens.dropin import describe
from cudalens.lsp.launch_edits import drop_in_phrase
from cudalens.optimize import optimize
from cudalens.present import fmt_user_launch
from cudalens.store.from_optimize import run_record
from cudalens.store.records import from_dict, to_dict
from cudalens.target import load_target
from launch_fakes import LaunchAwareClient

HOST = Path(__file__).resolve().parent.parent / "examples" / "host" / "layernorm"
NEW = "block = 128, grid = ceil_div(rows, 4)"


@pytest.fixture(scope="module")
def result():
    return optimize(load_target(HOST / "layernorm.cu"), LaunchAwareClient(), budget=8,
                    prune=False)


def test_each_row_says_how_it_runs_under_the_users_launch(result):
    # the warp-per-row rows (the block-per-row ones, for rows of 1024 columns, run another
    # launch the double does not model as the layernorm's)
    warp = [r for r in result.rows if "warp-per-row" in r.candidate.family]
    plain = [r for r in warp if "+gridstride" not in r.candidate.family]
    strided = [r for r in warp if "+gridstride" in r.candidate.family]
    assert len(plain) == 2 and len(strided) == 2
    for row in plain:
        assert row.launch_change.words == NEW
        assert row.drop_in.result.verdict.status == "mismatch" and not row.drop_in.ok
        assert fmt_user_launch(row) == "[red]needs new launch[/red] (mismatch)"
        assert describe(row.result.speedup, row.drop_in, row.launch_change) == \
            f"needs a new launch: 14.80x with {NEW}"
    for row in strided:
        assert row.drop_in.ok and row.drop_in.speedup.value == 1.8
        assert fmt_user_launch(row) == "1.80x [1.75, 1.85]"
        assert describe(row.result.speedup, row.drop_in, row.launch_change) == \
            f"1.80x as a drop-in; 14.50x with {NEW}"
    assert result.best_drop_in is strided[0]
    assert result.winner is plain[0]


def test_the_stored_record_keeps_it_and_the_editor_words_it_the_same(result):
    record = from_dict(to_dict(run_record(result, key="k", provenance="test",
                                          created="2026-12-01T00:00:00+00:00")))
    by_label = {c.label: c for c in record.candidates}
    for row in result.rows:
        cand = by_label[row.candidate.label]
        assert cand.launch_changed is True
        assert cand.drop_in == row.drop_in.result
        assert cand.drop_in_ok == row.drop_in.ok
        assert drop_in_phrase(cand) == describe(row.result.speedup, row.drop_in,
                                                row.launch_change)


def test_a_candidate_that_keeps_the_launch_is_its_own_drop_in():
    from gpu_runner.report import CandidateResult, CompileReport, Speedup, Verdict
    from cudalens.dropin import DropIn

    passed = CandidateResult(CompileReport("c1", True), Verdict("c1", "passed", "ok"), None,
                             Speedup(2.31, 2.2, 2.4))
    assert describe(passed.speedup, DropIn(passed, own=True), None) == "2.31x as a drop-in"
