"""``cudalens optimize --proposer llm|builtin|auto``: options, configuration, the choice of
proposer, Ctrl-C, and the lines and JSON record that report an agent session.

The CLI applies ``agent_options`` to its ``optimize`` command, builds the configuration with
``config_from_cli`` and asks ``choose_proposer`` which proposer to use; ``auto`` takes the LLM
when one is configured and its server answers, else the built-in search, and
``ProposerChoice.reason`` says which and why. ``offline_choice`` answers without contacting
the model's server where it can, so that the CLI contacts it only once a GPU runner is there.

A project file may set ``base_url`` and ``api_key_env`` only when trusted
(``cudalens.agent.trust``): ``--trust-project-config``, ``--agent-config FILE``, or a folder
listed in the user file; ``config_warnings`` says what an untrusted one set and was ignored.
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Mapping, Optional

import click

from cudalens.agent import trust
from cudalens.agent.config import AgentConfig, ConfigError
from cudalens.agent.config_file import Sources, find_sources, load_agent_config
from cudalens.errors import CudalensError

PROPOSERS = ("auto", "llm", "builtin")
# The keyword arguments ``agent_options`` adds to a command, and the config field each sets.
AGENT_OPTIONS = {
    "model": "model", "base_url": "base_url", "api_key_env": "api_key_env",
    "temperature": "temperature", "rounds": "rounds",
    "candidates_per_round": "candidates_per_round", "time_budget": "time_budget_s",
    "token_budget": "token_budget",
}


@dataclass(frozen=True)
class ProposerChoice:
    """Which proposer runs (``llm`` or ``builtin``) and one sentence saying why."""

    kind: Literal["llm", "builtin"]
    reason: str


def agent_options(command: Callable) -> Callable:
    """Adds ``--proposer`` and ``config_options`` to a click command (its function receives
    ``proposer`` and what ``config_options`` gives)."""
    command = config_options(command)
    return click.option("--proposer", type=click.Choice(PROPOSERS), default="auto",
                        show_default=True,
                        help="Who proposes candidates: an LLM, the built-in search, or the LLM "
                             "when one is configured and reachable.")(command)


def config_options(command: Callable) -> Callable:
    """Adds the LLM settings, ``--agent-config`` and ``--trust-project-config`` to a click
    command (its function receives ``agent_config``, ``trust_project_config`` and the keys of
    ``AGENT_OPTIONS``)."""
    options = [
        click.option("--model", help="LLM model name (overrides [agent] model)."),
        click.option("--base-url", help="Chat-completions server, e.g. http://localhost:8000/v1 "
                                        "(default: OpenAI's)."),
        click.option("--api-key-env", help="NAME of the environment variable holding the API key "
                                           "(default OPENAI_API_KEY)."),
        click.option("--temperature", type=float, help="Sampling temperature."),
        click.option("--rounds", type=int, help="LLM rounds (propose, measure, feed back)."),
        click.option("--candidates-per-round", type=int, help="Most LLM candidates per round."),
        click.option("--time-budget", type=float, help="Seconds for the LLM loop (0: no limit)."),
        click.option("--token-budget", type=int, help="Tokens for the LLM loop (0: no limit)."),
        click.option("--agent-config", type=click.Path(path_type=Path),
                     help="Configuration file (cudalens.toml or pyproject.toml) instead of the "
                          "one found next to FILE; it is trusted."),
        click.option("--trust-project-config", is_flag=True,
                     help="Let the project file found for FILE set base_url and api_key_env "
                          "(where the API key is sent, and which variable holds it); without "
                          "this, an untrusted project file's values for them are ignored."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def sources_from_cli(file: Path, *, agent_config: Optional[Path] = None,
                     trust_project_config: bool = False) -> Sources:
    """The user file and the project file for ``file`` (searched up to its repository root).

    Raises:
        ConfigError: ``agent_config`` is missing, or the user file is unusable.
    """
    return find_sources(start=file, config_file=agent_config, trust_project=trust_project_config)


def config_from_cli(file: Path, *, agent_config: Optional[Path] = None,
                    settings: Optional[Mapping[str, Any]] = None,
                    trust_project_config: bool = False, sources: Optional[Sources] = None,
                    **options: Any) -> AgentConfig:
    """The configuration for optimizing ``file``: the user file, the project file found from
    ``file`` (or ``agent_config``), then ``settings``, then the options given (keys of
    ``AGENT_OPTIONS``). The project file sets ``base_url`` and ``api_key_env`` only when
    trusted (``trust_project_config``, ``agent_config``, or the user file's ``[trust]``).

    Raises:
        ConfigError: an unknown option, or an unusable value (named with its layer).
    """
    unknown = sorted(set(options) - set(AGENT_OPTIONS))
    if unknown:
        raise ConfigError(f"command line: unknown agent options {', '.join(unknown)}")
    cli = {AGENT_OPTIONS[k]: v for k, v in options.items() if v is not None}
    if sources is None:
        sources = sources_from_cli(file, agent_config=agent_config,
                                   trust_project_config=trust_project_config)
    return load_agent_config(settings=settings, cli=cli, sources=sources)


def config_warnings(config: AgentConfig) -> list[str]:
    """What an untrusted project file set and was ignored, one line per file, each saying how
    to trust it (empty when nothing was ignored)."""
    return trust.untrusted_warnings(config.ignored, trust.cli_how(trust.user_config_path()))


def probe_server(config: AgentConfig) -> Optional[str]:
    """None when ``config``'s server answers and serves its model, else why not."""
    from cudalens.agent.chat import ChatClient

    client = ChatClient(config)
    try:
        return client.probe()
    finally:
        client.close()


def offline_choice(requested: str, config: AgentConfig) -> Optional[ProposerChoice]:
    """The proposer for ``--proposer requested`` where it is known without contacting the
    model's server (``cudalens.engine.proposer.decide`` without a probe, in the CLI's words);
    None when ``choose_proposer`` must ask that server.

    Raises:
        ConfigError: ``requested`` is not one of ``PROPOSERS``, or is ``llm`` with no model
            configured.
    """
    from cudalens.engine.proposer import decide  # noqa: PLC0415

    if requested not in PROPOSERS:
        raise ConfigError(f"--proposer: expected one of {', '.join(PROPOSERS)}, "
                          f"found {requested!r}")
    decision = decide(requested, config)
    if decision.why == "asked":
        return ProposerChoice("builtin", "proposer: the built-in search (--proposer builtin)")
    if decision.why == "not_configured":
        how = ("set model in the [agent] table of cudalens.toml (or [tool.cudalens.agent] in "
               "pyproject.toml), or pass --model")
        if decision.kind == "refused":
            raise ConfigError(f"--proposer llm needs a model: {how}")
        return ProposerChoice("builtin", f"proposer: the built-in search (no LLM is configured; "
                                         f"to use one, {how})")
    return None


def choose_proposer(requested: str, config: AgentConfig, *,
                    probe: Callable[[AgentConfig], Optional[str]] = probe_server) -> ProposerChoice:
    """The proposer for ``--proposer requested`` (``offline_choice``'s answer where it has
    one, else after asking the model's server with ``probe``).

    Raises:
        ConfigError: ``requested`` is not one of ``PROPOSERS``, or is ``llm`` with no model
            configured.
        CudalensError: ``requested`` is ``llm`` and its server cannot be used.
    """
    from cudalens.engine.proposer import decide  # noqa: PLC0415

    early = offline_choice(requested, config)
    if early is not None:
        return early
    decision = decide(requested, config, probe)
    if decision.kind == "llm":
        key = "" if config.api_key() else f" (no key in ${config.api_key_env})"
        return ProposerChoice("llm", f"proposer: the LLM {config.endpoint}{key}")
    problem = decision.problem
    if not config.api_key():
        problem += f" (and no API key is set in ${config.api_key_env})"
    if decision.kind == "refused":
        raise CudalensError(f"--proposer llm: the model cannot be used: {problem}")
    return ProposerChoice("builtin", f"proposer: the built-in search (the LLM is configured but "
                                     f"cannot be used: {problem})")


@contextmanager
def sigint_cancels(cancel: threading.Event,
                   say: Callable[[str], None] = lambda _m: None) -> Iterator[threading.Event]:
    """While active, the first Ctrl-C sets ``cancel`` (the loop stops at its next step and the
    results so far are reported); a second one interrupts at once. Only installed in the main
    thread, and only where SIGINT is not ignored (a background job started with SIGINT ignored
    stays immune to it); elsewhere this does nothing."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) == signal.SIG_IGN):
        yield cancel
        return

    def handler(signum, frame):
        if cancel.is_set():
            raise KeyboardInterrupt
        cancel.set()
        text = "cancelling: finishing the current step (Ctrl-C again to stop at once)"
        say(text)
        print(f"cudalens: {text}", file=sys.stderr, flush=True)  # also when not on a terminal

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield cancel
    finally:
        signal.signal(signal.SIGINT, previous)


def summary_lines(result: Any) -> list[str]:
    """What an agent session did, in a few lines for the terminal (``AgentResult``)."""
    counts = result.counts()
    shown = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in sorted(counts.items()))
    u = result.usage
    est = " (partly estimated: the server reported no usage)" if u.estimated else ""
    cost = (f"cost ${result.cost.usd:.4f} ({result.cost.note})" if result.cost.usd is not None
            else result.cost.note)
    lines = [
        f"LLM proposer: {result.endpoint}; {len(result.rounds)} round(s), "
        f"{sum(counts.values())} proposal(s)" + (f": {shown}" if shown else "")
        + f"; stopped: {result.stop_reason}.",
        f"Tokens: {u.total_tokens:,} ({u.prompt_tokens:,} prompt, {u.completion_tokens:,} "
        f"completion) in {result.requests} request(s){est}; {cost}.",
    ]
    for o in result.outcomes:
        if o.status != "passed":  # why, in the words the model was told (first two lines)
            told = " ".join(line.strip() for line in o.feedback.splitlines()[:2] if line.strip())
            lines.append(f"{o.label}: {told[:200] + ('...' if len(told) > 200 else '')}")
    if result.confirmed:
        lines.append("The best candidates of different rounds were timed again side by side; "
                     "the table shows that run.")
    lines += [f"Note: {n}." for n in result.notes]
    return lines


def _plain(obj: Any) -> Any:
    if hasattr(obj, "__dataclass_fields__"):
        return {k: _plain(v) for k, v in asdict(obj).items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(x) for x in obj]
    return obj


def agent_record(result: Any) -> dict[str, Any]:
    """A JSON-compatible record of an agent session (``AgentResult``), without sources or the
    conversation; the API key is never part of it (only ``api_key_env``'s name is configured)."""
    return {
        "endpoint": result.endpoint,
        "stop_reason": result.stop_reason,
        "requests": result.requests,
        "usage": {**_plain(result.usage), "total_tokens": result.usage.total_tokens},
        "cost_usd": result.cost.usd,
        "cost_note": result.cost.note,
        "confirmed": result.confirmed,
        "notes": list(result.notes),
        "rounds": [{
            "index": r.index, "requests": r.requests, "seconds": round(r.seconds, 3),
            "usage": _plain(r.usage),
            "outcomes": [{
                "label": o.label, "origin": o.origin, "status": o.status, "feedback": o.feedback,
                "explanation": o.candidate.explanation if o.candidate else None,
                "tried": [{"setting": s, "status": res.verdict.status,
                           "median_us": res.timing.median_us if res.timing else None,
                           "speedup": _plain(res.speedup)} for s, res in o.tried],
            } for o in r.outcomes],
        } for r in result.rounds],
    }


def run_llm_proposer(target: Any, client: Any, config: AgentConfig, *, repetitions: int = 50,
                     on_event: Optional[Callable[[Any], None]] = None,
                     cancel: Optional[threading.Event] = None) -> Any:
    """Runs the LLM proposer through the engine (``cudalens.engine.run``) with Ctrl-C
    cancelling it (``sigint_cancels``); returns the ``AgentResult`` (its ``optimize`` is
    printed like the built-in search's result).

    Raises:
        CudalensError: see ``cudalens.agent.loop.run_agent``.
    """
    from cudalens.engine.events import Note
    from cudalens.engine.proposer import Budget, LlmProposer
    from cudalens.engine.run import run

    cancel = cancel or threading.Event()
    say = on_event or (lambda _e: None)
    with sigint_cancels(cancel, lambda text: say(Note(text))):
        return run(target, client, LlmProposer(config), Budget(repetitions=repetitions), say,
                   cancel).agent
