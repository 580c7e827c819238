"""The optimize flow's own decisions, with a runner double that passes every variant it is sent
(its numbers are placeholders; what is checked is which variants reach the runner)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from gpu_runner.report import (CandidateResult, CompileReport, DeviceInfo, Evaluation, Speedup,
                               Timing, Verdict)
from cudalens.engine.runner import WithoutTools
from cudalens.optimize import optimize
from cudalens.target import load_target

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class PassEverything(WithoutTools):
    def __init__(self):
        self.sent = []  # every variant of every call
        self.calls = []  # the variants of each call

    def device_info(self):
        return DeviceInfo("test GPU", (9, 0), 132, 50 << 20, 1024, 49152, 1980, 3201, "test",
                          13000, 4000.0)

    def evaluate(self, problem, baseline, candidates, repetitions=50, on_event=None):
        first = len(self.sent)
        self.sent.extend(candidates)
        self.calls.append(list(candidates))
        t = Timing("baseline", 10.0, 9.0, 11.0, 8.0, repetitions, 100.0, 2.5)
        # later variants "measure" faster, so the best come from different calls
        return Evaluation(self.device_info(), CompileReport("baseline", True), t, tuple(
            CandidateResult(CompileReport(c.label, True), Verdict(c.label, "passed", "ok"),
                            dataclasses.replace(t, variant=c.label),
                            Speedup(1.0 + 0.01 * (first + i), 1.0 + 0.01 * (first + i) - 0.005,
                                    1.0 + 0.01 * (first + i) + 0.005))
            for i, c in enumerate(candidates)))


def test_candidates_whose_launch_cannot_run_the_problem_are_skipped_with_the_reason(tmp_path):
    # A tall matrix: 524280 rows need grid.y = 131070 blocks of 4 rows, above the 65535 limit,
    # while the spec's own 32x8 block needs 65535 and is legal.
    shutil.copy(EXAMPLES / "transpose.cu", tmp_path / "tall.cu")
    spec = (EXAMPLES / "transpose.cu.spec").read_text()
    spec = spec.replace("size rows = 8192", "size rows = 524280").replace(
        "size cols = 8192", "size cols = 32")
    (tmp_path / "tall.cu.spec").write_text(spec)
    client = PassEverything()
    result = optimize(load_target(tmp_path / "tall.cu"), client, budget=1000, seed=0,
                      prune=False)
    skipped = dict(result.skipped)
    assert "block=32x4" in skipped
    assert "grid.y" in skipped["block=32x4"] and "65535" in skipped["block=32x4"]
    assert all(launch.grid[1] <= 65535 for v in client.sent for launch in v.launches)
    assert len(client.sent) > 8
    # the rows are those of the last call (the confirmation of the best four of the batches
    # and the best of two other families that change the launch), then those of them with
    # another launch under the spec's launch (LABEL@user)
    own = [v.label for v in client.calls[-1] if not v.label.endswith("@user")]
    assert [r.result.verdict.variant for r in result.rows] == own
    assert len(own) == 6
    moved = [r for r in result.rows if r.launch_change is not None]
    assert [v.label for v in client.calls[-1][6:]] == \
        [f"{r.result.verdict.variant}@user" for r in moved]
    assert len(result.batches) == len(client.calls)



def test_the_best_of_different_batches_are_confirmed_together_and_the_winner_comes_from_that():
    from cudalens.present import search_lines

    # budget 16 in batches of 8: the four fastest (c13..c16) all ran in the second batch, but
    # three of them change the launch, so they are confirmed (as c17..c20) with the fastest of
    # two other families that change the launch (c21, c22), and those five under the spec's
    # launch (LABEL@user; c19 keeps the launch)
    client = PassEverything()
    result = optimize(load_target(EXAMPLES / "saxpy.cu"), client, budget=16, seed=0,
                      prune=False)
    assert [len(c) for c in client.calls] == [8, 8, 11]
    assert [v.label for v in client.calls[-1]] == [
        "c17", "c18", "c19", "c20", "c21", "c22", "c17@user", "c18@user", "c20@user",
        "c21@user", "c22@user"]
    assert [r.candidate.family for r in result.rows] == [
        "", "restrict vec4+gridstride", "restrict", "", "gridstride", "vec4+gridstride"]
    spec_launch = client.calls[-1][2].launches  # c19's own launch is the spec's
    assert all(v.launches == spec_launch for v in client.calls[-1][6:])
    assert [v.source for v in client.calls[-1][6:]] == \
        [client.calls[-1][i].source for i in (0, 1, 3, 4, 5)]
    assert result.confirmed
    assert result.evaluation is result.batches[-1].evaluation
    assert result.winner.result.verdict.variant == "c22"
    assert [r.launch_change is not None for r in result.rows] == [True, True, False, True,
                                                                  True, True]
    assert [(r.drop_in.result.verdict.variant, r.drop_in.own) for r in result.rows] == [
        ("c17@user", False), ("c18@user", False), ("c19", True), ("c20@user", False),
        ("c21@user", False), ("c22@user", False)]

    # budget 14 in batches of 6: the four fastest are c14, c13 (third batch) and c12, c11
    # (second): they are timed again together, as c15..c18, with the fastest of two other
    # families that change the launch (c19, c20), and the winner comes from that run
    client = PassEverything()
    result = optimize(load_target(EXAMPLES / "saxpy.cu"), client, budget=14, seed=0, batch=6,
                      prune=False)
    assert [len(c) for c in client.calls] == [6, 6, 2, 11]
    assert result.confirmed and result.evaluation is result.batches[-1].evaluation
    again = [v.source for v in client.calls[-1][:4]]
    fastest = [client.sent[i].source for i in (13, 12, 11, 10)]
    assert again == fastest
    assert [r.result.verdict.variant for r in result.rows] == ["c15", "c16", "c17", "c18",
                                                               "c19", "c20"]
    # in the confirmation run the last one "measured" fastest
    assert result.winner.result.verdict.variant == "c20"
    assert result.winner.candidate.source == client.calls[-1][5].source
    lines = search_lines(result)
    assert lines[0] == ("Search: 4 runner evaluation(s), 25 candidate timing(s), 0 pruned before "
                        "timing by the compile report; stopped: the budget of 14 timed "
                        "candidates is used.")
    assert lines[-1].startswith("The table's times come from the last evaluation")
