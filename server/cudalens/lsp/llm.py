"""The LLM proposer in the editor: which proposer a job uses, and what its progress says.

``choose(settings, path)`` builds the agent configuration for a kernel file (the user file,
the project file found from ``path`` up to its workspace folder, then the editor's
``cudalens.llm`` settings: ``Settings.agent_settings``) and picks the proposer the way ``cudalens optimize --proposer`` does: ``builtin``; ``llm`` (an
error when no model is configured or its server does not answer); ``auto`` (the LLM when a
model is configured and its server answers, else the built-in passes, saying why). The
project file sets ``base_url`` and ``api_key_env`` only in a trusted workspace
(``Settings.workspace_trusted``) or under a folder the user file trusts; what an untrusted
one set is ignored and named in ``Choice.warnings`` (``cudalens.agent.trust``).

``AgentProgress`` turns the agent loop's events (``cudalens.engine.events``: ``LlmRound``,
``LlmProposal``, ...) and the runner's (``Compiling``, ``TimingRound``, ...) into what the
editor shows: ``round 2/4, best 1.80x: timing round 7/50``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Union

from cudalens.agent import trust
from cudalens.agent.config import AgentConfig, ConfigError
from cudalens.agent.config_file import load_agent_config
from cudalens.engine.events import (Compiling, Confirming, Event, LlmProposal, LlmRound,
                                    MeasuringOriginal, Note, Stopped, TimingRound, Verifying,
                                    WarmingUp)
from cudalens.engine.proposer import BuiltinProposer, LlmProposer, Proposer, decide
from cudalens.errors import CudalensError
from cudalens.lsp.config import Settings
from cudalens.store.records import RunRecord

BUILTIN = "built-in passes"
_HOW = ("set cudalens.llm.model (and cudalens.llm.baseUrl for a server other than OpenAI's) "
        "in the editor's settings, or model in the [agent] table of cudalens.toml")


@dataclass(frozen=True)
class Choice:
    """The proposer a job runs: ``kind`` ``llm`` (with its ``config``) or ``builtin``;
    ``reason`` says which and why (``the built-in passes (no LLM is configured)``); ``fallback`` is True when ``auto`` wanted
    the LLM but could not use it; ``warnings``: what an untrusted project file set and was
    ignored (``config_warnings``)."""

    kind: str
    reason: str
    config: Optional[AgentConfig] = None
    fallback: bool = False
    warnings: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``LLM fake-coder at http://...`` or ``built-in passes``."""
        return f"LLM {self.config.endpoint}" if self.kind == "llm" and self.config else BUILTIN

    def proposer(self, replay=None) -> Proposer:
        """The engine's proposer for this choice (``cudalens.engine.proposer``); ``replay``:
        the captured launch the built-in search times (``cudalens.lsp.capture_action
        .replay_for``; the LLM proposer replays none)."""
        return LlmProposer(self.config) if self.kind == "llm" else BuiltinProposer(replay=replay)


def agent_config(settings: Settings, path: Path) -> AgentConfig:
    """The agent configuration for a kernel in ``path``.

    Raises:
        ConfigError: the project file or a setting is unusable (the message names it).
    """
    return load_agent_config(start=path, settings=settings.agent_settings(),
                             workspace_roots=settings.workspace_roots,
                             trust_project=settings.workspace_trusted,
                             trust_reason="the editor's workspace trust")


def config_warnings(config: AgentConfig) -> tuple[str, ...]:
    """One warning per untrusted project file whose values were ignored, saying how to trust
    it in the editor."""
    return tuple(trust.untrusted_warnings(config.ignored,
                                          trust.editor_how(trust.user_config_path())))


def origins(config: AgentConfig) -> str:
    """Where the values that decide where requests go came from, for the log: ``model 'm'
    from /repo/cudalens.toml [agent]; base_url ... from default; ...``."""
    return "; ".join(f"{key} {getattr(config, key)!r} from {config.origin(key)}"
                     for key in ("model", "base_url", "api_key_env"))


def _probe(config: AgentConfig) -> Optional[str]:
    from cudalens.cli_agent import probe_server

    return probe_server(config)


def choose(settings: Settings, path: Path,
           probe: Callable[[AgentConfig], Optional[str]] = _probe) -> Choice:
    """The proposer for a job (see the module doc). Blocks for the reachability check (at
    most ``probe_timeout_s``): call it off the event loop.

    Raises:
        ConfigError: ``llm`` is asked and the agent configuration is unusable or names no
            model (``auto`` falls back to the built-in passes, saying why).
        CudalensError: ``llm`` is asked and its server cannot be used.
    """
    config, error = None, ""
    if settings.proposer != "builtin":
        try:
            config = agent_config(settings, path)
        except ConfigError as exc:
            if settings.proposer == "llm":
                raise
            error = str(exc)
    decision = decide(settings.proposer, config, probe, settings_error=error)
    if decision.why == "asked":
        return Choice("builtin", "the built-in passes (cudalens.proposer is builtin)")
    if decision.why == "settings_unusable":
        return Choice("builtin", f"the built-in passes (the LLM settings are unusable: "
                                 f"{decision.problem})", fallback=True)
    warnings = config_warnings(config)
    if decision.why == "not_configured":
        if decision.kind == "refused":
            ignored = f" ({' '.join(warnings)})" if warnings else ""
            raise ConfigError(f"cudalens.proposer is llm but no model is configured: "
                              f"{_HOW}{ignored}")
        return Choice("builtin", "the built-in passes (no LLM is configured)",
                      warnings=warnings)
    if decision.kind == "llm":
        key = "" if config.api_key() else f" (no key in ${config.api_key_env}; sent none)"
        return Choice("llm", f"the LLM {config.endpoint}{key}", config, warnings=warnings)
    if decision.kind == "refused":
        raise CudalensError(f"the LLM {config.endpoint} cannot be used: {decision.problem}")
    return Choice("builtin", f"the built-in passes (the LLM {config.endpoint} cannot be used: "
                             f"{decision.problem})", config, fallback=True, warnings=warnings)


def action_label(settings: Union[Settings, str], path: Path) -> str:
    """How the Optimize code action names its proposer, without contacting any server:
    ``built-in passes``, ``LLM MODEL at URL``, ``LLM MODEL at URL if it answers, else
    built-in passes``, or what is missing for ``llm``."""
    if isinstance(settings, str):  # only the proposer is known
        settings = Settings(proposer=settings)
    if settings.proposer == "builtin":
        return BUILTIN
    try:
        config = agent_config(settings, path)
    except ConfigError:
        return f"{BUILTIN}: the LLM settings are unusable" if settings.proposer == "auto" \
            else "LLM: its settings are unusable"
    if not config.configured:
        return BUILTIN if settings.proposer == "auto" else "LLM: no model is configured"
    if settings.proposer == "auto":
        return f"LLM {config.endpoint} if it answers, else {BUILTIN}"
    return f"LLM {config.endpoint}"


class AgentProgress:
    """Progress of one agent session as the editor shows it; ``best`` is the fastest
    verified speedup seen so far (from the loop's ``LlmProposal`` events that ``passed``).

    Percentages: 0-5 measuring the original, then each of ``rounds`` rounds an equal share of
    5-95, the final side-by-side timing 95, stopped 99.
    """

    def __init__(self, rounds: int):
        self.rounds = max(rounds, 1)
        self.round = 0
        self.best: Optional[float] = None

    def _prefix(self) -> str:
        if self.round == 0:
            return "measuring the original"
        best = f", best {self.best:.2f}x" if self.best is not None else ""
        return f"round {self.round}/{self.rounds}{best}"

    def _percent(self, within: float) -> int:
        if self.round == 0:
            return int(5 * within)
        return int(5 + 90 * (self.round - 1 + within) / self.rounds)

    def describe(self, event: Event) -> Optional[tuple[str, Optional[int]]]:
        """The text and percentage for one event (``cudalens.engine.events``); a ``Note`` is
        shown as it is, after the round prefix; None for events the editor does not show
        (verdicts, times: the results show them)."""
        if isinstance(event, MeasuringOriginal):
            return f"measuring the original {event.kernel} on {event.device}", 0
        if isinstance(event, LlmRound):
            self.round = event.round
            if event.phase == "asking":
                return f"{self._prefix()}: asking the model", self._percent(0.0)
            return (f"{self._prefix()}: verifying and timing {event.variants} variant(s)",
                    self._percent(0.3))
        if isinstance(event, LlmProposal):
            self.round = event.round
            x = f"{event.speedup:.2f}" if event.speedup is not None else None
            if event.status == "passed" and x is not None:
                self.best = max(self.best or 0.0, float(x))
            shown = f"{event.label} {event.status}" + (f", {x}x" if x is not None else "")
            return f"{self._prefix()}: {shown}", self._percent(0.95)
        if isinstance(event, Compiling):
            return f"{self._prefix()}: compiling {event.label}", self._percent(0.35)
        if isinstance(event, Verifying):
            who = "baseline" if event.baseline else event.label
            return (f"{self._prefix()}: verifying {who} against the original",
                    self._percent(0.5))
        if isinstance(event, TimingRound):
            return (f"{self._prefix()}: timing round {event.round}/{event.of}",
                    self._percent(0.6 + 0.35 * event.round / max(event.of, 1)))
        if isinstance(event, WarmingUp):
            return f"{self._prefix()}: timing warm-up", self._percent(0.6)
        if isinstance(event, Confirming):
            return f"timing the best {len(event.labels)} candidates again side by side", 95
        if isinstance(event, Stopped):
            return f"LLM stopped: {event.reason}", 99
        if isinstance(event, Note):
            return f"{self._prefix()}: {event.message}", None
        return None


def agent_outcome(record: RunRecord, result) -> str:
    """The final progress message of an LLM job (``AgentResult`` ``result``): ``best 1.90x
    (verified) from the LLM fake-coder at URL; 2 round(s), 2 proposal(s): 1 mismatch, 1
    passed; stopped: all 2 rounds done``."""
    offers = record.offers()
    counts = result.counts()
    shown = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in sorted(counts.items()))
    head = (f"best {offers[0].result.speedup.value:.2f}x (verified)" if offers else
            "no candidate faster beyond noise")
    return (f"{head} from the LLM {result.endpoint}; {len(result.rounds)} round(s), "
            f"{sum(counts.values())} proposal(s)" + (f": {shown}" if shown else "")
            + f"; stopped: {result.stop_reason}")
