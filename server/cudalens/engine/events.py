"""The events of one optimization run, typed: what every front end renders.

The runner's own events (``gpu_runner.events``: ``Compiling``, ``Compiled``, ``Verifying``,
``Verified``, ``Rejected``, ``WarmingUp``, ``TimingRound``, ``Timed``, ``Note``) come back
from the runner service decoded into their classes (``cudalens.runner_client``); the engine
adds those of the run around them (this module), which never cross the HTTP boundary:

- ``RunStarted(kernel, device, proposer)``: the run begins;
- ``Pruned(label, reason)``: a candidate dropped before the GPU (the compile report rules it
  out, or its launch cannot run these sizes);
- ``BatchStarted(candidates, labels, device)``: one runner evaluation of ``labels`` begins;
  ``candidates`` counts every candidate sent so far, this batch's included;
- ``BatchDone(labels, verified)``: that evaluation came back, ``verified`` of its labels
  passed;
- ``BestSoFar(speedup, label, candidates)``: the fastest verified candidate of the batches
  so far (``label``: its passes, ``"restrict block=512"``);
- ``Confirming(labels, under_user_launch)``: the best candidates timed again together with
  the baseline (the confirmation step, ``cudalens.engine.confirm``);
- ``MeasuringOriginal(kernel, device)``, ``LlmRound(round, phase, variants)`` and
  ``LlmProposal(round, label, status, speedup)``: the LLM proposer's steps (``phase``:
  ``asking`` the model or ``measuring`` its round's ``variants``; ``status``: a verdict's
  status, or ``refused`` / ``does not compile`` before the GPU);
- ``Stopped(reason, cause)``: the proposer stopped (``cause``: ``done``, ``budget``,
  ``cancelled``, ``runner_failed`` or ``model_failed``; ``reason`` in words).

Each event's ``text()`` is the line the CLI shows for it (the same words as before events
existed); the editor renders them in ``cudalens.lsp.jobs`` and ``cudalens.lsp.llm``.
Speedups are ratios (baseline median over candidate median).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Optional, Union

from gpu_runner.events import (RUNNER_EVENTS, Compiled, Compiling, Note, Rejected, Timed,
                               TimingRound, Verified, Verifying, WarmingUp)

__all__ = ["Compiling", "Compiled", "Verifying", "Verified", "Rejected", "WarmingUp",
           "TimingRound", "Timed", "Note", "RunStarted", "Pruned", "BatchStarted",
           "BatchDone", "BestSoFar", "Confirming", "MeasuringOriginal", "LlmRound",
           "LlmProposal", "Stopped", "Event", "ENGINE_EVENTS", "EVENTS", "OnEvent",
           "StopCause", "ignore", "DETAIL_EVENTS", "status_text"]

StopCause = Literal["done", "budget", "cancelled", "runner_failed", "model_failed"]


@dataclass(frozen=True)
class RunStarted:
    """A run of ``proposer`` (``built-in passes`` or ``LLM MODEL at URL``) on ``kernel``
    begins, on the runner's ``device``."""

    kernel: str
    device: str
    proposer: str
    kind: Literal["run_started"] = "run_started"

    def text(self) -> str:
        return f"proposing candidates for {self.kernel}"


@dataclass(frozen=True)
class Pruned:
    """Candidate ``label`` is not sent to the GPU; ``reason`` says why."""

    label: str
    reason: str
    kind: Literal["pruned"] = "pruned"

    def text(self) -> str:
        return f"pruned: {self.label}: {self.reason}"


@dataclass(frozen=True)
class BatchStarted:
    """One runner evaluation of the candidates ``labels`` (in order) begins on ``device``;
    ``candidates``: candidates sent so far, these included (the last label is
    ``c{candidates}``)."""

    candidates: int
    labels: tuple[str, ...]
    device: str
    kind: Literal["batch_started"] = "batch_started"

    def text(self) -> str:
        return f"{self.candidates} candidates; verifying and timing on {self.device}"


@dataclass(frozen=True)
class BatchDone:
    """The evaluation of ``labels`` came back; ``verified`` of them passed."""

    labels: tuple[str, ...]
    verified: int
    kind: Literal["batch_done"] = "batch_done"

    def text(self) -> str:
        return f"batch done: {self.verified}/{len(self.labels)} verified"


@dataclass(frozen=True)
class BestSoFar:
    """The fastest verified candidate so far: ``speedup`` (a ratio), ``label`` (what it is),
    after ``candidates`` candidates."""

    speedup: float
    label: str
    candidates: int
    kind: Literal["best_so_far"] = "best_so_far"

    def text(self) -> str:
        return (f"best so far: {self.speedup:.2f}x ({self.label}, verified), "
                f"{self.candidates} candidates")


@dataclass(frozen=True)
class Confirming:
    """The best candidates, ``labels``, are timed again together with the baseline;
    ``under_user_launch`` of them also under the user's launch."""

    labels: tuple[str, ...]
    under_user_launch: int = 0
    kind: Literal["confirming"] = "confirming"

    def text(self) -> str:
        also = (f", and {self.under_user_launch} of them under your launch too"
                if self.under_user_launch else "")
        return (f"confirming the {len(self.labels)} fastest candidates: timing them again "
                f"together with the baseline{also}")


@dataclass(frozen=True)
class MeasuringOriginal:
    """The LLM proposer measures the original ``kernel`` alone on ``device``."""

    kernel: str
    device: str
    kind: Literal["measuring_original"] = "measuring_original"

    def text(self) -> str:
        return f"measuring the original {self.kernel} on {self.device}"


@dataclass(frozen=True)
class LlmRound:
    """Round ``round`` (from 1) of the LLM proposer: ``asking`` the model at ``endpoint``, or
    ``measuring`` ``variants`` variants on ``device``."""

    round: int
    phase: Literal["asking", "measuring"]
    variants: int = 0
    endpoint: str = ""
    device: str = ""
    kind: Literal["llm_round"] = "llm_round"

    def text(self) -> str:
        if self.phase == "asking":
            return f"round {self.round}: asking {self.endpoint}"
        return (f"round {self.round}: verifying and timing {self.variants} variant(s) on "
                f"{self.device}")


@dataclass(frozen=True)
class LlmProposal:
    """What became of proposal ``label`` (``r2c1``) of round ``round``: ``status`` is a
    verdict's status (``passed``, ``mismatch``, ...), ``refused`` or ``does not compile``;
    ``speedup`` where it was timed."""

    round: int
    label: str
    status: str
    speedup: Optional[float] = None
    kind: Literal["llm_proposal"] = "llm_proposal"

    def text(self) -> str:
        x = f", {self.speedup:.2f}x" if self.speedup is not None else ""
        return f"round {self.round}: {self.label} {self.status}{x}"


@dataclass(frozen=True)
class Stopped:
    """The proposer stopped: ``reason`` in words, ``cause`` as a value (module doc)."""

    reason: str
    cause: StopCause = "done"
    kind: Literal["stopped"] = "stopped"

    def text(self) -> str:
        return f"agent stopped: {self.reason}"


ENGINE_EVENTS = (RunStarted, Pruned, BatchStarted, BatchDone, BestSoFar, Confirming,
                 MeasuringOriginal, LlmRound, LlmProposal, Stopped)
EVENTS = RUNNER_EVENTS + ENGINE_EVENTS
Event = Union[Compiling, Compiled, Verifying, Verified, Rejected, WarmingUp, TimingRound,
              Timed, Note, RunStarted, Pruned, BatchStarted, BatchDone, BestSoFar, Confirming,
              MeasuringOriginal, LlmRound, LlmProposal, Stopped]
OnEvent = Callable[[Event], None]


def ignore(_event: Event) -> None:
    """An ``on_event`` that drops every event."""


# Detail events: no front end showed a line for these before events existed; a status line
# that shows what is happening now skips them (the results table reports them).
DETAIL_EVENTS = (Compiled, Verified, Rejected, Timed, Pruned, BatchDone)


def status_text(event: Event) -> Optional[str]:
    """The status line for ``event`` (its ``text()``), None for a detail event
    (``DETAIL_EVENTS``)."""
    return None if isinstance(event, DETAIL_EVENTS) else event.text()
