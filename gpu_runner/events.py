"""What the runner reports while it evaluates: typed events, one data class each.

The runner (``runner.py``, ``verify.py``, ``timing.py``), the worker supervisor and the
service's pool call ``on_event(event)`` with these; the service keeps them in the job's status
(``GET /v1/jobs/{id}``: ``events``, in the wire encoding of ``service/schema.py``, each with
its ``kind``), and ``cudalens.runner_client`` decodes them into the same classes. Nothing
reads a state from progress *text*: each event's ``text()`` is only what a person reads (the
job status's ``progress`` lines, the CLI's status line), the same words the runner printed
before there were events.

Events, in the order an evaluation sends them (labels are ``Variant.label``: ``baseline`` or
a candidate's):

- ``Compiling(label)`` before a variant is compiled; ``Compiled(label, ok, reason)`` after
  (``reason``: the compile error's first line when not ``ok``);
- ``Verifying(label, case, seed, baseline)`` before a variant runs on one case and seed (the one the
  supervisor blames when the worker dies right after it);
- ``Verified(label, reason)`` a candidate passed every case and seed; ``Rejected(label,
  verdict)`` a candidate failed, with its ``gpu_runner.report.Verdict`` (compile error,
  mismatch, fault, stale after timing, ...);
- ``WarmingUp(launches, variants)``, then ``TimingRound(round, of)`` every tenth round and
  the last;
- ``Timed(label, median_us, speedup)`` for each variant timed (``speedup`` None for the
  baseline and for a candidate judged stale after the timing loop);
- ``Note(text)``: anything else a person may want to read (the probe, the kernel time limit,
  a worker replaced); never parsed.

Units: microseconds; ``round`` counts from 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Callable, Literal, Optional, Union

from pydantic import Field

from gpu_runner.report import Speedup, Verdict

__all__ = ["Compiling", "Compiled", "Verifying", "Verified", "Rejected", "WarmingUp",
           "TimingRound", "Timed", "Note", "RunnerEvent", "RUNNER_EVENTS", "OnEvent",
           "as_text", "emit_to"]


@dataclass(frozen=True)
class Compiling:
    """Variant ``label`` is about to be compiled."""

    label: str
    kind: Literal["compiling"] = "compiling"

    def text(self) -> str:
        return f"compile: {self.label}"


@dataclass(frozen=True)
class Compiled:
    """Variant ``label`` compiled (``ok``) or not (``reason``: the error's first line)."""

    label: str
    ok: bool
    reason: str = ""
    kind: Literal["compiled"] = "compiled"

    def text(self) -> str:
        return f"compiled: {self.label}" if self.ok else \
            f"compile error: {self.label}: {self.reason}"


@dataclass(frozen=True)
class Verifying:
    """Variant ``label`` is about to run on case ``case`` with inputs of ``seed``;
    ``baseline``: it is the reference (the text then says "baseline" whatever its label)."""

    label: str
    case: str
    seed: int
    baseline: bool = False
    kind: Literal["verifying"] = "verifying"

    def text(self) -> str:
        who = "baseline" if self.baseline else self.label
        return f"verify: {who} on case '{self.case}', seed {self.seed}"


@dataclass(frozen=True)
class Verified:
    """Candidate ``label`` matched the baseline on every case and seed (``reason`` says so)."""

    label: str
    reason: str = ""
    kind: Literal["verified"] = "verified"

    def text(self) -> str:
        return f"verified: {self.label}"


@dataclass(frozen=True)
class Rejected:
    """Candidate ``label`` failed with ``verdict`` (its status is not ``passed``)."""

    label: str
    verdict: Verdict
    kind: Literal["rejected"] = "rejected"

    def text(self) -> str:
        return f"rejected: {self.label} ({self.verdict.status}): {self.verdict.reason}"


@dataclass(frozen=True)
class WarmingUp:
    """``launches`` untimed launches of each of ``variants`` variants before timing."""

    launches: int
    variants: int
    kind: Literal["warming_up"] = "warming_up"

    def text(self) -> str:
        return (f"timing: warm-up, {self.launches} launch(es) of each of {self.variants} "
                f"variant(s)")


@dataclass(frozen=True)
class TimingRound:
    """Timed round ``round`` (from 1) of at most ``of`` is done."""

    round: int
    of: int
    kind: Literal["timing_round"] = "timing_round"

    def text(self) -> str:
        return f"timing: round {self.round} of at most {self.of}"


@dataclass(frozen=True)
class Timed:
    """Variant ``label``'s median time in microseconds; ``speedup`` against the baseline of
    the same timing loop (None for the baseline itself)."""

    label: str
    median_us: float
    speedup: Optional[Speedup] = None
    kind: Literal["timed"] = "timed"

    def text(self) -> str:
        x = f", {self.speedup.value:.2f}x" if self.speedup is not None else ""
        return f"timed: {self.label} {self.median_us:.2f} us{x}"


@dataclass(frozen=True)
class Note:
    """A sentence for a person (never parsed)."""

    message: str
    kind: Literal["note"] = "note"

    def text(self) -> str:
        return self.message


RUNNER_EVENTS = (Compiling, Compiled, Verifying, Verified, Rejected, WarmingUp, TimingRound,
                 Timed, Note)
RunnerEvent = Annotated[Union[Compiling, Compiled, Verifying, Verified, Rejected, WarmingUp,
                              TimingRound, Timed, Note], Field(discriminator="kind")]
OnEvent = Optional[Callable[[object], None]]


def emit_to(on_event: OnEvent) -> Callable[[object], None]:
    """``on_event``, or a callback that drops events when it is None."""
    return on_event or (lambda _e: None)


def as_text(callback: Callable[[str], None]) -> Callable[[object], None]:
    """An ``on_event`` that passes each event's ``text()`` to ``callback`` (for a log)."""
    return lambda event: callback(event.text())
