"""The confirmation step, one for every proposer (``cudalens.engine.confirm``): run here on
the in-process runner over the deterministic model backend (tests/data/lsp/model_runner.py:
modelled times, not measurements). The built-in search's use of it is exercised by
tests/test_dropin.py (labels ``cN@user``), the LLM agent's by tests/test_agent_loop.py
(``final1@user``); this file checks the step itself and that no proposer keeps its own."""

from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "data" / "lsp")]

from cudalens.engine import events as ev  # noqa: E402
from cudalens.engine.bench import Bench  # noqa: E402
from cudalens.engine.confirm import confirm, moved  # noqa: E402
from cudalens.engine.runner import InProcessRunner  # noqa: E402
from cudalens.optimizer.candidate import Candidate  # noqa: E402
from cudalens.target import load_target  # noqa: E402
from model_runner import MODEL_DEVICE, ModelBackend, model_timing  # noqa: E402

SERVER = ROOT / "server" / "cudalens"


@pytest.fixture()
def saxpy():
    return load_target(ROOT / "examples" / "saxpy.cu", "saxpy")


def _candidates(target):
    """Two rewrites of saxpy: ``__restrict__`` under the user's launch, and
    ``__launch_bounds__(512)`` with 512-thread blocks (another launch)."""
    head = "__global__ void saxpy("
    restrict = target.text.replace("const float* x, float* y", "const float* __restrict__ x, "
                                   "float* __restrict__ y", 1)
    assert restrict != target.text
    bounds = target.text.replace(head, "__global__ void __launch_bounds__(512) saxpy(", 1)
    wide = dataclasses.replace(target.spec.launch, block=("512",))
    return (Candidate(label="restrict", explanation="", source=restrict,
                      kernel=target.kernel.qualified_name, launch=target.spec.launch,
                      passes=("restrict",)),
            Candidate(label="bounds 512", explanation="", source=bounds,
                      kernel=target.kernel.qualified_name, launch=wide,
                      passes=("launch_bounds",)))


def _speedup(problem, baseline, variant, repetitions=10):
    base = model_timing(problem, baseline, "baseline", repetitions).median_us
    return base / model_timing(problem, variant, variant.label, repetitions).median_us


def test_the_best_are_timed_again_and_a_moved_one_also_under_the_users_launch(saxpy):
    seen: list = []
    runner = InProcessRunner(ModelBackend(), tools=False)
    bench = Bench.make(saxpy, runner, seen.append, repetitions=10)
    restrict, bounds = _candidates(saxpy)
    _, (row1,) = bench.measure([restrict])
    _, (row2,) = bench.measure([bounds])
    user = saxpy.spec.launch
    assert moved([row1, row2], user) == [row2]

    sent: list = []

    def send(variants, launches):
        sent.append(tuple(variants))
        assert launches == [bounds.launch, user, user]
        return bench.runner.evaluate(bench.problem, bench.baseline, variants, repetitions=10,
                                     on_event=seen.append)

    start = len(seen)
    done = confirm([row2, row1], user, ["f1", "f2"],
                   lambda label, row, launch: bench.variant(label, row.candidate, launch),
                   send, seen.append)
    # one evaluation: the two under their own launches, then the moved one under the user's
    (variants,) = sent
    assert [v.label for v in variants] == ["f1", "f2", "f1@user"]
    assert variants[0].launches[0].block == (512, 1, 1)
    assert variants[1].launches[0].block == (256, 1, 1)
    assert variants[2].launches[0].block == (256, 1, 1)
    assert variants[2].source == variants[0].source == bounds.source
    assert done.variants == variants
    # the event comes first, then the runner's steps on those labels
    assert seen[start] == ev.Confirming(("f1", "f2"), 1)
    assert seen[start].text() == ("confirming the 2 fastest candidates: timing them again "
                                  "together with the baseline, and 1 of them under your "
                                  "launch too")
    assert ev.Compiling("f1@user") in seen[start:]
    # the rows, in the order given, carry this evaluation's results and their drop-in verdicts
    first, second = done.rows
    assert first.candidate is bounds and second.candidate is restrict
    assert first.result.verdict.variant == "f1" and second.result.verdict.variant == "f2"
    assert first.launch_change is not None and first.launch_change.launch.block == ("512",)
    assert first.drop_in is not None and not first.drop_in.own
    assert first.drop_in.result.verdict.variant == "f1@user"
    assert first.drop_in.result is done.evaluation.candidates[2]
    assert first.drop_in.speedup.value == pytest.approx(
        _speedup(bench.problem, bench.baseline, variants[2]))
    assert first.result.speedup.value == pytest.approx(
        _speedup(bench.problem, bench.baseline, variants[0]))
    assert second.launch_change is None
    assert second.drop_in is not None and second.drop_in.own
    assert second.drop_in.result is second.result is done.evaluation.candidates[1]

    with pytest.raises(ValueError, match=r"expected one label per confirmed row \(2\), "
                                         r"found 1"):
        confirm([row2, row1], user, ["f1"], lambda *a: None, send, seen.append)


def test_a_bench_confirmation_keeps_the_drop_in_verdicts_in_its_result(saxpy):
    seen: list = []
    bench = Bench.make(saxpy, InProcessRunner(ModelBackend(), tools=False), seen.append,
                       repetitions=10)
    for candidate in _candidates(saxpy):
        bench.measure([candidate])
    evaluation, rows = bench.confirm(bench.best(2))
    assert ev.Confirming(("c3", "c4"), 1) in seen
    result = bench.result(evaluation, rows, confirmed=True)
    by_label = {row.candidate.label: row for row in result.rows}
    assert by_label["bounds 512"].drop_in.result.verdict.variant.endswith("@user")
    assert by_label["restrict"].drop_in.own
    assert result.device == MODEL_DEVICE


def _calls(path: Path, name: str) -> list[int]:
    """Lines of ``path`` that call ``name`` (a bare name or an attribute)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == name) or
        (isinstance(node.func, ast.Attribute) and node.func.attr == name))]


def test_no_proposer_keeps_a_confirmation_step_of_its_own():
    # the Confirming event and the "@user" variants are made in one place only
    makers = {str(p.relative_to(SERVER)): _calls(p, "Confirming") for p in SERVER.rglob("*.py")}
    assert {p: lines for p, lines in makers.items() if lines} == {
        "engine/confirm.py": _calls(SERVER / "engine" / "confirm.py", "Confirming")}
    user_labels = sorted(str(p.relative_to(SERVER)) for p in SERVER.rglob("*.py")
                         if '"@user"' in p.read_text(encoding="utf-8")
                         or "}@user" in p.read_text(encoding="utf-8"))
    assert user_labels == ["engine/confirm.py"]
    # and the built-in search, the LLM agent and the Bench all call it
    for rel, name in (("optimize.py", "confirm_rows"), ("agent/loop.py", "confirm"),
                      ("engine/bench.py", "confirm")):
        source = (SERVER / rel).read_text(encoding="utf-8")
        assert "from cudalens.engine.confirm import confirm" in source, rel
        assert _calls(SERVER / rel, name), rel
