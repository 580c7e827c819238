"""The recorded H200 runs (``benchmarks/results/h200-examples-*.json``) are consistent in
themselves, and the replay runner (``tests/data/lsp/replay_runner.py``) renders exactly what
they hold, without a GPU, or refuses.

Nothing here runs today's search against a recording, so a change to the optimizer's
candidates cannot turn this red (the language-server tests use the model runner,
``model_runner.py``). Whether the newest recordings still cover today's search is a report,
not a test: ``python benchmarks/replay_coverage.py``.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from replay_runner import (ROOT, Recording, ReplayMismatch, ReplayRunnerClient,  # noqa: E402
                           newest_recording_of, recorded_files)

from gpu_runner.events import Compiling  # noqa: E402
from gpu_runner.problem import Launch, Variant  # noqa: E402
from cudalens.optimize import optimize  # noqa: E402
from cudalens.spec.resolve import build_problem, build_variant  # noqa: E402
from cudalens.target import load_target  # noqa: E402

# (file, kernel) of every run recorded with each evaluation's sources (exact replay).
REPLAYABLE = sorted((f.name, r["kernel"]) for f in recorded_files()
                    for r in json.loads(f.read_text())["runs"]
                    if "kernel" in r and "evaluations" in r)
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def _recording(name: str) -> Recording:
    return Recording(ROOT / "benchmarks" / "results" / name)


def _variants(run: dict) -> dict[str, dict]:
    return {v["label"]: v for ev in run["evaluations"] for v in ev["variants"]}


@pytest.mark.parametrize("name,kernel", REPLAYABLE)
def test_each_reported_row_is_a_recorded_evaluation_with_the_same_numbers(name, kernel):
    run = _recording(name).run(kernel)
    sent = _variants(run)
    assert run["candidates"], f"{name}: {kernel} reports no candidate rows"
    for row in run["candidates"]:
        label = row["compile"]["variant"]
        assert label in sent, f"{name}: {kernel}'s row {row['label']!r} names runner variant " \
                              f"{label!r}, which no recorded evaluation sent"
        rec = sent[label]
        assert (rec["verdict"], rec["timing"], rec["speedup"]) == \
            (row["verdict"], row["timing"], row["speedup"]), f"{name}: {row['label']!r}"


@pytest.mark.parametrize("name,kernel", REPLAYABLE)
def test_the_recorded_diff_leads_to_the_recorded_winners_source(name, kernel):
    run = _recording(name).run(kernel)
    if run["winner"] is None:
        assert run["diff"] == ""
        return
    (row,) = [r for r in run["candidates"] if r["label"] == run["winner"]["label"]][:1]
    assert row["speedup"] == run["winner"]["speedup"]
    source = _variants(run)[row["compile"]["variant"]]["source"].splitlines()
    lines = run["diff"].splitlines()
    hunks = [i for i, line in enumerate(lines) if HUNK.match(line)]
    assert hunks, f"{name}: {kernel}'s diff has no hunk"
    for start, end in zip(hunks, hunks[1:] + [len(lines)]):
        first = int(HUNK.match(lines[start]).group(1)) - 1
        new_side = [line[1:] for line in lines[start + 1:end] if not line.startswith("-")]
        assert source[first:first + len(new_side)] == new_side, \
            f"{name}: {kernel}'s diff hunk at line {first + 1} is not in the winner's source"


def test_a_recorded_evaluation_replays_with_its_own_numbers():
    recording, run = newest_recording_of("saxpy")
    target = load_target(ROOT / run["file"], run["kernel"])
    device = recording.device()
    problem = build_problem(target.spec, target.kernel)
    baseline = build_variant("baseline", target.text, target.kernel.qualified_name, target.spec,
                             target.spec.launch, device.sm_count)
    ev = run["evaluations"][0]
    asked = [Variant(label=f"v{i}", source=v["source"], name=baseline.name,
                     launches=tuple(Launch(**{**x, "grid": tuple(x["grid"]),
                                              "block": tuple(x["block"])})
                                    for x in v["launches"]),
                     options=tuple(v["options"]))
             for i, v in enumerate(ev["variants"])]
    said = []
    got = ReplayRunnerClient([recording.path]).evaluate(problem, baseline, asked,
                                                        on_event=said.append)
    assert got.baseline.median_us == ev["baseline"]["median_us"]
    assert [(c.verdict.status, c.verdict.variant, c.speedup and c.speedup.value)
            for c in got.candidates] == \
        [(v["verdict"]["status"], f"v{i}", v["speedup"] and v["speedup"]["value"])
         for i, v in enumerate(ev["variants"])]
    assert said[0] == Compiling("baseline") and Compiling("v0") in said


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
