"""The optimize flow's own decisions, with a runner double that passes every variant it is sent
(its numbers are placeholders; what is checked is which variants reach the runner)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from gpu_runner.report import (CandidateResult, CompileReport, DeviceInfo, Evaluation, Speedup,
                               Timing, Verdict)
from cudalens.optimize import optimize
from cudalens.target import load_target

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class PassEverything:
    def __init__(self):
        self.sent = []  # every variant of every call
        self.calls = []  # the variants of each call

    def device_info(self):
        return DeviceInfo("test GPU", (9, 0), 132, 50 << 20, 1024, 49152, 1980, 3201, "test",
                          13000, 4000.0)

    def evaluate(self, problem, baseline, candidates, repetitions=50, progress=None):
        first = len(self.sent)
        self.sent.extend(candidates)
        self.calls.append(list(candidates))
        t = Timing("baseline", 10.0, 9.0, 11.0, 8.0, repetitions, 100.0, 2.5)
        # later variants "measure" faster, so the best come from different calls
        return Evaluation(self.device_info(), CompileReport("baseline", True), t, tuple(
            CandidateResult(CompileReport(c.label, True), Verdict(c.label, "passed", "ok"),
                            dataclasses.replace(t, variant=c.label),
                            Speedup(1.0 + 0.01 * (first + i), 0.9, 1.1))
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
    # the rows are those of the last call (the confirmation of the best four of the batches)
    assert [r.result.verdict.variant for r in result.rows] == [v.label for v in client.calls[-1]]
    assert len(client.calls[-1]) == 4
    assert len(result.batches) == len(client.calls)
