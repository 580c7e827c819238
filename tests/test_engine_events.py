"""Every runner event crosses the real HTTP service typed, with every field as sent.

The runner service runs in its own process (``tests/data/runner/fake_gpu_service.py``) with
real spawned worker processes whose backend (``tests/event_backend.py``) sends one event of
each ``gpu_runner.events`` type; ``RunnerClient`` decodes the job status's ``events`` into
the same classes. The engine's own events (``cudalens.engine.events``) never cross HTTP; they
round-trip through the same wire encoding.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time

import httpx
import pytest

from cudalens.engine import events as engine_events
from cudalens.runner_client import RunnerClient
from gpu_runner import events as runner_events
from gpu_runner.events import RUNNER_EVENTS, RunnerEvent
from gpu_runner.service.schema import decode, encode

from event_backend import EVERY_EVENT
from service_fakes import problem, variant
from live_fake_runner import fake_runner_process

TOKEN = "engine-events-token-0123456789"


def test_the_backend_sends_every_runner_event_type_with_no_field_left_at_its_default():
    assert sorted(type(e).__name__ for e in EVERY_EVENT) == \
        sorted(cls.__name__ for cls in RUNNER_EVENTS)
    for event in EVERY_EVENT:
        for f in dataclasses.fields(event):
            if f.name != "kind" and f.default is not dataclasses.MISSING:
                assert getattr(event, f.name) != f.default, (event, f.name)


@pytest.fixture(scope="module")
def runner_url(tmp_path_factory):
    with fake_runner_process(tmp_path_factory.mktemp("events"), TOKEN,
                             backend="event_backend:EveryEventBackend") as url:
        yield url


def _sent_run(events: list) -> list:
    """The run of ``EVERY_EVENT`` within ``events`` (the backend's own events around it)."""
    start = next(i for i, e in enumerate(events) if e == EVERY_EVENT[0])
    return events[start:start + len(EVERY_EVENT)]


def test_runner_client_decodes_every_event_into_its_class_with_every_field(runner_url):
    got: list = []
    with RunnerClient(runner_url, token=TOKEN, poll_interval_s=0.02) as client:
        ev = client.evaluate(problem(), variant("baseline"), [variant("c1"), variant("c2")],
                             repetitions=5, on_event=got.append)
    assert [c.verdict.status for c in ev.candidates] == ["passed", "passed"]
    run = _sent_run(got)
    assert [type(e) for e in run] == [type(e) for e in EVERY_EVENT]
    for sent, back in zip(EVERY_EVENT, run):
        for f in dataclasses.fields(sent):  # field by field, so a failure names the field
            assert getattr(back, f.name) == getattr(sent, f.name), (type(sent).__name__, f.name)
    mismatch = run[4].verdict.mismatch
    assert mismatch.index == 2**62 + 1 and math.isinf(mismatch.expected)
    assert math.isinf(run[7].median_us)
    # the supervisor's own words are events too, never parsed
    assert runner_events.Note("probe: the baseline alone, to set the kernel time limit") in got


def test_the_job_status_has_each_event_typed_and_as_text(runner_url):
    headers = {"Authorization": f"Bearer {TOKEN}"}
    body = {"problem": problem(), "baseline": variant("baseline"),
            "candidates": [variant("c1")], "repetitions": 5}
    with httpx.Client(base_url=runner_url, headers=headers, timeout=30) as http:
        job = http.post("/v1/evaluate", content=encode(body),
                        headers={"Content-Type": "application/json"}).json()["id"]
        deadline = time.monotonic() + 60
        while (status := http.get(f"/v1/jobs/{job}").json())["state"] not in ("done", "failed"):
            assert time.monotonic() < deadline, status
            time.sleep(0.05)
    assert status["state"] == "done"
    assert len(status["events"]) == len(status["progress"]) == status["progress_next"]
    typed = decode(list[RunnerEvent], status["events"])
    assert status["progress"] == [e.text() for e in typed]
    run = _sent_run(typed)
    assert run == list(EVERY_EVENT)
    assert {e["kind"] for e in status["events"]} == {cls.kind for cls in RUNNER_EVENTS}
    assert json.loads(json.dumps(status["events"])) == status["events"]  # plain JSON


ENGINE_SAMPLES = (
    engine_events.RunStarted("saxpy", "NVIDIA H200", "built-in passes"),
    engine_events.Pruned("restrict block=512", "new spills: 24 bytes of local memory"),
    engine_events.BatchStarted(16, ("c9", "c10"), "NVIDIA H200"),
    engine_events.BatchDone(("c9", "c10"), 1),
    engine_events.BestSoFar(1.8312, "restrict block=512", 16),
    engine_events.Confirming(("c17", "c18"), 1),
    engine_events.MeasuringOriginal("saxpy", "NVIDIA H200"),
    engine_events.LlmRound(2, "measuring", 3, "m at http://x/v1", "NVIDIA H200"),
    engine_events.LlmProposal(2, "r2c1", "passed", 1.5),
    engine_events.Stopped("the runner failed: unreachable", "runner_failed"),
)


def test_every_engine_event_round_trips_through_the_wire_encoding():
    assert sorted(type(e).__name__ for e in ENGINE_SAMPLES) == \
        sorted(cls.__name__ for cls in engine_events.ENGINE_EVENTS)
    for event in ENGINE_SAMPLES:
        data = json.loads(encode(event))
        assert data["kind"] == event.kind
        assert decode(type(event), data) == event


@pytest.mark.parametrize("event, text", [
    (runner_events.Compiling("c5"), "compile: c5"),
    (runner_events.Verifying("c5", "nominal", 1), "verify: c5 on case 'nominal', seed 1"),
    (runner_events.Verifying("base", "ragged", 2, baseline=True),
     "verify: baseline on case 'ragged', seed 2"),
    (runner_events.WarmingUp(3, 5), "timing: warm-up, 3 launch(es) of each of 5 variant(s)"),
    (runner_events.TimingRound(7, 50), "timing: round 7 of at most 50"),
    (engine_events.BatchStarted(12, (), "NVIDIA H200"),
     "12 candidates; verifying and timing on NVIDIA H200"),
    (engine_events.BestSoFar(1.8312, "restrict block=512", 16),
     "best so far: 1.83x (restrict block=512, verified), 16 candidates"),
    (engine_events.Confirming(("c25", "c26", "c27", "c28"), 2),
     "confirming the 4 fastest candidates: timing them again together with the baseline, "
     "and 2 of them under your launch too"),
    (engine_events.LlmProposal(1, "r1c2", "passed", 1.8), "round 1: r1c2 passed, 1.80x"),
    (engine_events.Stopped("all 4 rounds done"), "agent stopped: all 4 rounds done"),
])
def test_the_text_is_the_line_the_runner_and_the_flow_printed_before_events(event, text):
    assert event.text() == text


READERS = ("server/cudalens/lsp/jobs.py", "server/cudalens/lsp/llm.py",
           "server/cudalens/lsp/progress.py", "server/cudalens/engine/events.py",
           "server/cudalens/engine/run.py", "server/cudalens/engine/proposer.py",
           "server/cudalens/runner_client.py", "gpu_runner/workers/supervisor.py",
           "gpu_runner/workers/results.py", "gpu_runner/events.py")


@pytest.mark.parametrize("path", READERS)
def test_the_modules_that_read_or_render_events_use_no_regular_expressions(path):
    import ast
    from pathlib import Path

    tree = ast.parse((Path(__file__).resolve().parent.parent / path).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "re" not in imported, f"{path} imports re: events are typed, never parsed"
