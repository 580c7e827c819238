"""The replay runner the language-server tests optimize with answers only what was recorded.

The recorded files (``benchmarks/results/h200-examples-*.json``) come from real H200 runs and
hold every candidate's label, verdict and timing, and the winner's diff, but no sources.
These tests check, for each kernel's newest recording, that re-running the deterministic
search proposes only candidates that were measured, that each gets the numbers recorded for
its label, and that the recorded winner's diff is reproduced byte for byte (so the numbers
belong to that very source); and that anything else is refused instead of answered.

When the optimizer's search changes (new passes, new order), the first test fails with the
reason and the way out: record the examples again on a GPU (``benchmarks/run_examples.py``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from replay_runner import (ROOT, ReplayMismatch, ReplayRunnerClient, coverage_problem,  # noqa: E402
                           newest_recording_of, recorded_files)

from cudalens.optimize import optimize  # noqa: E402
from cudalens.target import load_target  # noqa: E402

# Kernels with a recording that can be replayed exactly (each evaluation with its sources);
# older recordings stay in benchmarks/results/ as results, not as replays.
KERNELS = sorted({r["kernel"] for f in recorded_files() for r in json.loads(f.read_text())["runs"]
                  if "kernel" in r and "evaluations" in r})


def _body(diff: str) -> list[str]:
    """A unified diff without its two file-name lines (the recording names absolute paths)."""
    return diff.splitlines()[2:]


@pytest.mark.parametrize("kernel", KERNELS)
def test_newest_recording_covers_the_search_and_its_numbers_are_replayed(kernel):
    problem = coverage_problem(kernel)
    assert problem is None, problem
    recording, run = newest_recording_of(kernel)
    budget = recording.data["settings"]["budget"]
    target = load_target(ROOT / run["file"], run["kernel"])
    result = optimize(target, ReplayRunnerClient([recording.path]), budget=budget)

    assert result.evaluation.baseline.median_us == run["baseline"]["median_us"]
    recorded = {c["label"]: c for c in run["candidates"]}
    for row in result.rows:
        rec = recorded[row.candidate.label]
        assert row.result.verdict.status == rec["verdict"]["status"]
        assert (row.result.speedup.value if row.result.speedup else None) == \
            (rec["speedup"]["value"] if rec["speedup"] else None)
    assert (result.winner.candidate.label if result.winner else None) == \
        (run["winner"]["label"] if run["winner"] else None)
    assert _body(result.diff()) == _body(run["diff"])


def test_replay_refuses_an_edited_kernel():
    target = load_target(ROOT / "examples" / "saxpy.cu", "saxpy")
    edited = dataclasses.replace(target, text=target.text.replace("a * x[i] + y[i]",
                                                                  "a * x[i] + 2.0f * y[i]"))
    with pytest.raises(ReplayMismatch, match="the baseline differs from examples/saxpy.cu as "
                                             "recorded"):
        optimize(edited, ReplayRunnerClient(), budget=24)


def test_replay_refuses_another_problem_size():
    from cudalens.spec.model import SizeDecl

    target = load_target(ROOT / "examples" / "saxpy.cu", "saxpy")
    spec = dataclasses.replace(target.spec, sizes=(SizeDecl("n", "1 << 20", 3),))
    with pytest.raises(ReplayMismatch, match="the problem for saxpy differs from the one recorded"):
        optimize(dataclasses.replace(target, spec=spec), ReplayRunnerClient(), budget=24)


def test_replay_device_copy_bandwidth_is_the_runs_own():
    path = ROOT / "benchmarks/results/h200-examples-2026-11-29-0295825.json"
    recording, run = newest_recording_of("saxpy", [path])
    device = recording.device(run)
    base = run["baseline"]
    # the percentage recorded with the timing is against the device the evaluation reports
    assert base["achieved_gbps"] / device.copy_bandwidth_gbps * 100 == \
        pytest.approx(base["percent_of_copy"])
    assert recording.provenance.startswith(
        "replay of benchmarks/results/h200-examples-2026-11-29-0295825.json: recorded on "
        "NVIDIA H200 at commit 02958257e3")
