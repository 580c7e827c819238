"""The ``Proposer`` protocol, its two implementations, and the one choice between them.

A proposer turns a target into measured candidates on a runner: ``propose(target, runner,
budget, on_event, cancel) -> Proposal``. It proposes, sends each batch to the runner, reads
the verdicts back, and ends with the confirmation step (the best candidates of different
batches timed again together with the baseline: ``cudalens.engine.confirm``), so a
``Proposal``'s speedups always come from one interleaved run. It emits the run's events
(``cudalens.engine.events``) and ends with a ``Stopped``.

- ``BuiltinProposer``: the built-in passes (``cudalens.optimize.optimize``: the batched,
  compile-pruned search over ``cudalens.optimizer.staged_search``); ``stages`` composes other
  passes (a test's toy pass). Cancel: the next event after ``cancel`` is set raises
  ``RunCancelled``.
- ``LlmProposer``: the LLM agent (``cudalens.agent.loop.run_agent``); cancel stops a request
  to the model at once and a runner batch at its next event, and the proposal keeps what was
  measured (``Stopped.cause`` ``cancelled``).

``decide(requested, config, probe)`` is the one choice (``builtin``, ``llm`` or ``auto``:
the LLM when a model is configured and its server answers, else the built-in passes); the CLI
(``cudalens.cli_agent``) and the editor (``cudalens.lsp.llm``) word its ``Decision``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal, Optional, Protocol

from cudalens.engine.events import Event, OnEvent, Stopped

if TYPE_CHECKING:
    from cudalens.agent.config import AgentConfig
    from cudalens.capture.replay import Replay
    from cudalens.engine.runner import Runner
    from cudalens.optimize import OptimizeResult
    from cudalens.target import Target

__all__ = ["Budget", "Proposal", "Proposer", "BuiltinProposer", "LlmProposer", "RunCancelled",
           "Decision", "decide", "BUILTIN_LABEL"]

BUILTIN_LABEL = "built-in passes"


class RunCancelled(Exception):
    """The run was cancelled (its ``cancel`` event set); nothing of it is kept."""


@dataclass(frozen=True)
class Budget:
    """How much a run may spend: ``candidates`` timed candidates at most (the built-in search;
    the LLM's rounds are its configuration's), ``seconds`` of search (None: no limit),
    ``repetitions`` timed launches per variant, ``seed`` of the search order."""

    candidates: int = 24
    seconds: Optional[float] = None
    repetitions: int = 50
    seed: int = 0


@dataclass(frozen=True)
class Proposal:
    """What a proposer found: ``result`` (rows, winner, evaluations), why and how it stopped
    (``stop``), and the LLM session (``agent``: ``cudalens.agent.result.AgentResult``) when
    the LLM proposed."""

    result: "OptimizeResult"
    stop: Stopped
    agent: Any = None

    @property
    def failed(self) -> bool:
        """The runner or the model's server failed: not the run that was asked for."""
        return self.stop.cause in ("runner_failed", "model_failed")

    @property
    def cancelled(self) -> bool:
        return self.stop.cause == "cancelled"


class Proposer(Protocol):
    """Proposes candidates for a target and measures them on a runner (module doc).
    ``label`` names it for people: ``built-in passes``, ``LLM MODEL at URL``."""

    label: str

    def propose(self, target: "Target", runner: "Runner", budget: Budget, on_event: OnEvent,
                cancel: threading.Event) -> Proposal:
        """The proposal. Raises ``RunCancelled`` where it keeps nothing of a cancelled run,
        and ``cudalens.errors.CudalensError`` when the baseline cannot be built or
        measured."""
        ...


class BuiltinProposer:
    """The built-in passes (module doc). ``stages``: the passes composed stage by stage
    (None: ``cudalens.optimizer.staged_search.STAGES``); ``replay``: time and verify on a
    captured launch (``cudalens.capture.replay``); ``prune``: drop candidates the compile
    report rules out."""

    label = BUILTIN_LABEL

    def __init__(self, *, stages=None, replay: Optional["Replay"] = None, prune: bool = True):
        self.stages, self.replay, self.prune = stages, replay, prune

    def propose(self, target, runner, budget: Budget, on_event: OnEvent,
                cancel: threading.Event) -> Proposal:
        from cudalens.optimize import optimize  # noqa: PLC0415 (the optimizer is heavy)

        def say(event: Event) -> None:
            if cancel.is_set():
                raise RunCancelled("cancelled")
            on_event(event)

        result = optimize(target, runner, budget=budget.candidates, seed=budget.seed,
                          repetitions=budget.repetitions, seconds=budget.seconds,
                          on_event=say, replay=self.replay, prune=self.prune,
                          stages=self.stages)
        stop = Stopped(result.stop or "the search is done", "done")
        on_event(stop)
        return Proposal(result, stop)


class LlmProposer:
    """The LLM agent with ``config`` (``cudalens.agent.config.AgentConfig``); ``chat``: the
    model client (None: made from ``config``)."""

    def __init__(self, config: "AgentConfig", *, chat=None):
        self.config = config
        self.chat = chat
        self.label = f"LLM {config.endpoint}"

    def propose(self, target, runner, budget: Budget, on_event: OnEvent,
                cancel: threading.Event) -> Proposal:
        from cudalens.agent.loop import run_agent  # noqa: PLC0415

        agent = run_agent(target, runner, self.config, chat=self.chat, cancel=cancel,
                          on_event=on_event, repetitions=budget.repetitions)
        return Proposal(agent.optimize, Stopped(agent.stop_reason, agent.stop_cause), agent)


Why = Literal["asked", "settings_unusable", "not_configured", "answers", "cannot_be_used",
              "needs_probe"]


@dataclass(frozen=True)
class Decision:
    """Which proposer runs: ``kind`` ``builtin`` or ``llm``, or ``refused`` (``llm`` was
    asked and cannot be used), or ``undecided`` (only the model's server can tell: call
    ``decide`` again with a ``probe``); ``why`` as a value, ``problem`` in words (the
    settings' error, or why the server cannot be used); ``fallback``: ``auto`` wanted the LLM
    and could not use it."""

    kind: Literal["builtin", "llm", "refused", "undecided"]
    why: Why
    config: Optional["AgentConfig"] = None
    problem: str = ""
    fallback: bool = False

    def proposer(self, **kw) -> Proposer:
        """The proposer decided on (``kw`` to ``BuiltinProposer``). Raises ``ValueError`` for
        a refused or undecided decision."""
        if self.kind == "builtin":
            return BuiltinProposer(**kw)
        if self.kind == "llm":
            return LlmProposer(self.config)
        raise ValueError(f"no proposer to run: the decision is {self.kind} ({self.why})")


def decide(requested: str, config: Optional["AgentConfig"],
           probe: Optional[Callable[["AgentConfig"], Optional[str]]] = None, *,
           settings_error: str = "") -> Decision:
    """The proposer for ``requested`` (``builtin``, ``llm`` or ``auto``) with the agent
    ``config`` (None with ``settings_error`` when the settings could not be read). ``probe``
    (None: do not contact the model's server) returns None when the server answers, else why
    not; without it, a choice that needs the server is ``undecided``.

    Raises:
        ValueError: ``requested`` is none of the three.
    """
    if requested not in ("builtin", "llm", "auto"):
        raise ValueError(f"expected builtin, llm or auto, found {requested!r}")
    if requested == "builtin":
        return Decision("builtin", "asked", config)
    if config is None:
        if requested == "llm":
            return Decision("refused", "settings_unusable", None, settings_error)
        return Decision("builtin", "settings_unusable", None, settings_error, fallback=True)
    if not config.configured:
        return Decision("refused" if requested == "llm" else "builtin", "not_configured", config)
    if probe is None:
        return Decision("undecided", "needs_probe", config)
    problem = probe(config)
    if problem is None:
        return Decision("llm", "answers", config)
    if requested == "llm":
        return Decision("refused", "cannot_be_used", config, problem)
    return Decision("builtin", "cannot_be_used", config, problem, fallback=True)

