"""Every verdict of the adversarial suite through the runner's real HTTP service and client,
without a GPU (issue 11, item 1).

A live runner process (``tests/data/runner/fake_gpu_service.py``: the real application, job
store and worker supervision) whose worker backend is ``adversarial_sim``: each candidate of
``tests/data/runner/adversarial/index.json`` gets the verdict the runner's own verdict code
gives a host model of its cheat (NaN read back from the poison, float32 values, element counts,
guard damage, timeouts, launch errors; correct rewrites timed). The client sends the suite's
three evaluations as ``test_adversarial_gpu`` builds them and must get every result back
exactly as the worker made it, field by field (NaN as NaN, ints as ints). The same suite on a
GPU, through a real ``cudalens runner``, is ``test_adversarial_gpu.py``'s ``service`` path.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from adversarial_sim import simulated_result
from cudalens.runner_client import RunnerClient
from exact_values import assert_exact
from gpu_runner.workers.results import rebase_timing
from live_fake_runner import fake_runner_process
from test_adversarial_gpu import baseline, candidate, entries, expected_statuses, make_problem

TOKEN = "adversarial-http-token-0123456789"
PROBLEMS = ("saxpy", "block_sum", "stencil3")


@pytest.fixture(scope="module")
def evaluations(tmp_path_factory):
    """{problem name: Evaluation} as the client decoded it."""
    folder = tmp_path_factory.mktemp("adversarial-http")
    with fake_runner_process(folder, TOKEN, "adversarial_sim:SimulatedAdversarialBackend") as url:
        with RunnerClient(url, token=TOKEN, start_timeout_s=60, request_timeout_s=120) as client:
            yield {name: client.evaluate(make_problem(name), baseline(name),
                                         [candidate(e) for e in entries(name)], repetitions=20,
                                         warmup=2)
                   for name in PROBLEMS}


def _came_back(evaluations, entry):
    ev = evaluations[entry["problem"]]
    return ev, next(c for c in ev.candidates if c.verdict.variant == entry["label"])


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e["label"])
def test_each_verdict_comes_back_intact(evaluations, entry):
    ev, got = _came_back(evaluations, entry)
    want = simulated_result(entry)
    # the service puts every timing against one copy bandwidth (its worker's), and each row
    # names the GPU it ran on (the one GPU, 0, here)
    want = dataclasses.replace(want, timing=rebase_timing(want.timing, ev.device), device=0)
    assert [g.index for g in ev.gpus] == [0] and ev.gpus[0].info == ev.device
    assert_exact(got, want, entry["label"])
    assert got.verdict.status in expected_statuses(entry), got.verdict.reason


def test_every_status_of_the_suite_and_the_poison_nan_were_carried(evaluations):
    got = {c.verdict.variant: c for ev in evaluations.values() for c in ev.candidates}
    assert {c.verdict.status for c in got.values()} == {
        "unwritten", "input_modified", "out_of_bounds", "timeout", "launch_error", "mismatch",
        "nondeterministic", "stale_after_timing", "passed"}
    nan_read_back = sorted(label for label, c in got.items()
                           if c.verdict.mismatch and isinstance(c.verdict.mismatch.actual, float)
                           and math.isnan(c.verdict.mismatch.actual))
    assert nan_read_back == ["partial_output", "whole_blocks_only", "works_every_other_call",
                             "works_every_other_call_after_verification", "writes_nothing"]
    m = got["writes_nothing"].verdict.mismatch
    assert (m.case, m.seed, m.buffer, m.index, m.mismatched, m.total) == \
        ("nominal", 1, "z", 0, 1 << 22, 1 << 22)
    assert "(it still holds the poison value" in got["writes_nothing"].verdict.reason
    assert all(ev.error == "" for ev in evaluations.values())
