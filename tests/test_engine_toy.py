"""A toy pass and a toy proposer, one file each (tests/data/engine/), run through
``cudalens.engine.run`` on the in-process runner over the deterministic model backend
(tests/data/lsp/model_runner.py: modelled times, not measurements)."""

from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "data" / "engine"), str(ROOT / "tests" / "data" / "lsp")]

from cudalens.engine import events as ev  # noqa: E402
from cudalens.engine.proposer import (Budget, BuiltinProposer, Decision, RunCancelled,  # noqa: E402
                                      decide)
from cudalens.engine.run import run  # noqa: E402
from cudalens.engine.runner import InProcessRunner, Runner  # noqa: E402
from cudalens.target import load_target  # noqa: E402
from model_runner import MODEL_DEVICE, ModelBackend, model_timing  # noqa: E402

toy_pass = importlib.import_module("toy_pass")
toy_proposer = importlib.import_module("toy_proposer")


@pytest.fixture()
def saxpy():
    return load_target(ROOT / "examples" / "saxpy.cu", "saxpy")


@pytest.fixture()
def runner():
    return InProcessRunner(ModelBackend(), tools=False, where="the model runner")


def _speedup(problem, baseline, variant, repetitions):
    base = model_timing(problem, baseline, "baseline", repetitions)
    return base.median_us / model_timing(problem, variant, variant.label, repetitions).median_us


def test_the_in_process_runner_is_a_runner(runner):
    assert isinstance(runner, Runner)
    assert runner.device_info() == MODEL_DEVICE
    assert runner.try_profile(None, None).kind == "unsupported"
    assert runner.sanitize(None, None).reason == "the model runner cannot run compute-sanitizer"


def test_a_toy_pass_runs_through_the_engine_as_the_only_stage(saxpy, runner):
    seen: list = []
    proposal = run(saxpy, runner, BuiltinProposer(stages=((toy_pass,),), prune=False),
                   Budget(candidates=4, repetitions=10), on_event=seen.append)
    result = proposal.result
    # the toy pass is the only one composed: one candidate, its rewrite
    assert [row.candidate.passes for row in result.rows] == [("toy_restrict",)]
    winner = result.winner
    assert winner is not None and winner.candidate.label == "toy-restrict"
    assert "__global__ void saxpy(int n, float a, const float* __restrict__ x, " \
           "float* __restrict__ y)" in winner.candidate.source
    (batch,) = result.batches
    assert winner.result.speedup.value == pytest.approx(
        _speedup(result.problem, _baseline(saxpy), batch.variants[0], 10))
    # the run's events, in order: started, the batch and the runner's steps, stopped
    assert seen[0] == ev.RunStarted("saxpy", MODEL_DEVICE.name, "built-in passes")
    assert ev.BatchStarted(1, ("c1",), MODEL_DEVICE.name) in seen
    assert ev.Compiling("c1") in seen and ev.Verifying("c1", "nominal", 1) in seen
    assert ev.BatchDone(("c1",), 1) in seen
    assert any(isinstance(e, ev.BestSoFar) and e.label == "toy-restrict" for e in seen)
    assert seen[-1] == proposal.stop and proposal.stop.cause == "done"
    assert not proposal.failed


def _baseline(target):
    from cudalens.spec.resolve import build_variant

    return build_variant("baseline", target.text, target.kernel.qualified_name, target.spec,
                         target.spec.launch, MODEL_DEVICE.sm_count)


def test_a_toy_proposer_runs_through_the_engine_and_confirms_its_best_two(saxpy, runner):
    seen: list = []
    proposal = run(saxpy, runner, toy_proposer.ToyProposer((256, 1024)),
                   Budget(repetitions=10), on_event=seen.append)
    result = proposal.result
    assert result.confirmed
    assert [row.candidate.label for row in result.rows] == \
        ["launch_bounds(256)", "launch_bounds(1024)"]
    assert ev.Confirming(("c3", "c4")) in seen
    assert seen[0] == ev.RunStarted("saxpy", MODEL_DEVICE.name, "toy launch bounds")
    assert seen[-1] == ev.Stopped("every bound was tried", "done")
    for row in result.rows:
        assert "__launch_bounds__(" in row.candidate.source
        assert row.result.verdict.ok and row.result.speedup.value > 1.0
    # the winner is picked by the one rule: the fastest whose interval lies above 1.0
    good = [r for r in result.rows if r.result.speedup.ci_low > 1.0]
    assert result.winner == (max(good, key=lambda r: r.result.speedup.value) if good else None)


def test_cancel_stops_the_built_in_proposer_at_its_next_event(saxpy, runner):
    cancel = threading.Event()

    def on_event(event):
        if isinstance(event, ev.Compiling):
            cancel.set()

    with pytest.raises(RunCancelled):
        run(saxpy, runner, BuiltinProposer(stages=((toy_pass,),), prune=False),
            Budget(repetitions=5), on_event=on_event, cancel=cancel)


class _Config:
    def __init__(self, configured=True):
        self.configured = configured
        self.endpoint = "m at http://x/v1"


@pytest.mark.parametrize("requested, config, answer, want", [
    ("builtin", _Config(), None, ("builtin", "asked", False)),
    ("auto", None, None, ("builtin", "settings_unusable", True)),
    ("llm", None, None, ("refused", "settings_unusable", False)),
    ("auto", _Config(False), None, ("builtin", "not_configured", False)),
    ("llm", _Config(False), None, ("refused", "not_configured", False)),
    ("auto", _Config(), None, ("llm", "answers", False)),
    ("auto", _Config(), "connection refused", ("builtin", "cannot_be_used", True)),
    ("llm", _Config(), "connection refused", ("refused", "cannot_be_used", False)),
])
def test_one_decision_chooses_the_proposer(requested, config, answer, want):
    got = decide(requested, config, lambda _c: answer, settings_error="bad rounds")
    assert (got.kind, got.why, got.fallback) == want
    assert got.problem == {"settings_unusable": "bad rounds",
                           "cannot_be_used": "connection refused"}.get(got.why, "")
    assert decide("auto", _Config()).kind == "undecided"  # no probe: only the server can say
    with pytest.raises(ValueError, match="expected builtin, llm or auto, found 'gpu'"):
        decide("gpu", None)
    assert isinstance(Decision("builtin", "asked").proposer(), BuiltinProposer)


def test_a_sanitizer_that_cannot_run_is_a_note_not_a_progress_line(saxpy):
    from cudalens.sanitize_check import check_original
    from gpu_runner.sanitize import SanitizeError

    def no_sanitizer(problem, variant, **kw):
        raise SanitizeError("compute-sanitizer was not found on PATH", "sanitizer_missing")

    said, notes = [], []
    runner = InProcessRunner(ModelBackend(), sanitize_fn=no_sanitizer)
    assert check_original(saxpy, runner, said.append, notes.append) == ()
    assert said == ["checking the original saxpy with compute-sanitizer"]
    assert notes == ["note: the original was not checked for races and memory errors: "
                     "compute-sanitizer could not check saxpy: compute-sanitizer was not found "
                     "on PATH"]
    # a runner that cannot sanitize is not asked at all
    assert check_original(saxpy, InProcessRunner(ModelBackend(), tools=False), said.append) == ()
    assert len(said) == 1
