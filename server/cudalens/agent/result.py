"""What an agent session produces: every candidate's outcome, round by round, and the totals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from gpu_runner.report import CandidateResult
from cudalens.agent.ledger import Cost, Usage
from cudalens.optimize import OptimizeResult
from cudalens.optimizer.candidate import Candidate

# Outcome statuses besides the runner's verdict statuses (gpu_runner.report.VerdictStatus).
REFUSED = "refused"  # no usable code, changed signature, side effects, bad launch or @tune
PRECHECK_FAILED = "precheck_failed"  # the local nvcc found compile errors before the runner
NOT_RUN = "not_run"            # accepted, but the session stopped before its batch ran


@dataclass(frozen=True)
class Outcome:
    """One proposal and what became of it.

    ``label``: ``r2c1`` (round 2, first proposal of the round); ``origin``: where in the reply
    it came from; ``status``: one of the statuses above or a runner verdict status; ``feedback``:
    exactly what the model was told about it. ``candidate``/``result``: the measured setting
    (the fastest verified one, else the first); ``tried``: every measured setting's label and
    result, for tuned candidates.
    """

    round: int
    label: str
    origin: str
    status: str
    feedback: str
    candidate: Optional[Candidate] = None
    result: Optional[CandidateResult] = None
    tried: tuple[tuple[str, CandidateResult], ...] = ()
    call_id: Optional[str] = None  # the tool call it came from, whose result carried the feedback


@dataclass(frozen=True)
class RoundRecord:
    """One round: its outcomes, the requests it took and their usage."""

    index: int
    outcomes: tuple[Outcome, ...]
    requests: int
    usage: Usage
    seconds: float


@dataclass(frozen=True)
class AgentResult:
    """The session: ``optimize`` is the result in the optimize flow's form (its rows are the
    final side-by-side timing of the best candidates when that ran), ``stop_reason`` says why
    the loop ended and ``stop_cause`` how (``cudalens.engine.events.StopCause``: ``done``,
    ``budget``, ``cancelled``, ``runner_failed``, ``model_failed``), ``notes`` what the
    session gave up or skipped (streaming, tools, the pre-check), ``messages`` the whole
    conversation."""

    optimize: OptimizeResult
    rounds: tuple[RoundRecord, ...]
    stop_reason: str
    usage: Usage
    requests: int
    cost: Cost
    endpoint: str
    notes: tuple[str, ...]
    confirmed: bool
    messages: tuple[dict[str, Any], ...]
    stop_cause: str = "done"

    @property
    def failed(self) -> bool:
        """The session stopped because the runner or the model's server failed: not the
        run that was asked for."""
        return self.stop_cause in ("runner_failed", "model_failed")

    @property
    def outcomes(self) -> tuple[Outcome, ...]:
        return tuple(o for r in self.rounds for o in r.outcomes)

    def counts(self) -> dict[str, int]:
        """How many proposals ended in each status."""
        out: dict[str, int] = {}
        for o in self.outcomes:
            out[o.status] = out.get(o.status, 0) + 1
        return out
