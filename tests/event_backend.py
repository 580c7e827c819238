"""A fake GPU worker backend that sends one event of every ``gpu_runner.events`` type, each
field set to a value other than its default (and awkward for JSON: NaN-free infinities,
integers past 2^53, quotes and non-ASCII text), before answering as ``FakeBackend`` does.

For ``tests/test_engine_events.py``: ``fake_runner_process(..., backend=
"event_backend:EveryEventBackend")`` serves it through the real runner service.
"""

from __future__ import annotations

from gpu_runner.events import (Compiled, Compiling, Note, Rejected, Timed, TimingRound,
                               Verified, Verifying, WarmingUp)
from gpu_runner.report import Mismatch, Speedup, Verdict

from service_fakes import FakeBackend

MISMATCH = Mismatch(case="ragged", seed=7, buffer="y", index=2**62 + 1,
                    expected=float("inf"), actual=-3.25, mismatched=2**53 + 3, total=2**60)

EVERY_EVENT = (
    Compiling("c1"),
    Compiled("c2", False, "error: expected a \";\" – naïve"),
    Verifying("c1", "ragged", 2**53 + 1, baseline=True),
    Verified("c1", "matches the baseline on every case and seed, twice"),
    Rejected("c2", Verdict("c2", "mismatch", "case 'ragged', seed 7: output 'y' differs",
                           MISMATCH)),
    WarmingUp(7, 3),
    TimingRound(40, 2**40),
    Timed("c1", float("inf"), Speedup(1.8125, 1.75, 1.875)),
    Note("kernel time limit 0.3 s (baseline median 1.5 us) \"quoted\" ü"),
)


class EveryEventBackend(FakeBackend):
    """``FakeBackend`` that first sends ``EVERY_EVENT`` for an evaluation with candidates."""

    def evaluate(self, task, progress):
        if task.spec.candidates:
            for event in EVERY_EVENT:
                progress(event)
        return super().evaluate(task, progress)
