"""The server's settings: what the client sends under the ``cudalens`` section.

Read with ``workspace/configuration`` (section ``cudalens``) after ``initialized`` and again
on every ``workspace/didChangeConfiguration``; a client that pushes settings in that
notification (``{"cudalens": {...}}``) is read directly. Shape, with defaults::

    {
      "runner":   {"url": "", "token": ""},     # "" url: the local GPU, in-process runner
      "proposer": "auto",                         # or "builtin", "llm"
      "llm":      {"model": "", "baseUrl": "", "apiKeyEnv": "", "temperature": null,
                   "candidatesPerRound": null, "rounds": null,
                   "timeBudgetSeconds": null, "tokenBudget": null},
      "budget":   {"candidates": 24, "repetitions": 50, "seed": 0},
      "check":    {"enabled": true, "arch": "sm_90", "nvcc": "nvcc", "options": [],
                   "debounceMs": 400},
      "profile":  true,                           # Nsight Compute profile after a run
      "sanitize": true,                           # compute-sanitizer on the original first
      "capture":  {"command": ""},                # "python train.py" or ["python", "train.py"]
      "workspaceTrusted": false                   # the user trusts the workspace's files
    }

``sanitize``: before an optimize job, run compute-sanitizer on the original kernel
(``cudalens.sanitize_check.check_original``); an original with a race or an invalid access is
not used as a reference: the job fails with the finding and its line. Off: no check.

``workspaceTrusted``: the editor's workspace trust (the VS Code extension always sets it from
``vscode.workspace.isTrusted``, whatever a settings file says, and sends it again when trust
is granted). Only in a trusted workspace may a project file (``cudalens.toml``) set where the
API key is sent (``base_url``) and which variable holds it (``api_key_env``); otherwise those
are ignored with a warning (``cudalens.agent.trust``). Project files are looked for from the
kernel up to the innermost workspace folder holding it (``Settings.workspace_roots``, from
``initialize``, not a setting), never above.

``capture.command``: the program the "Capture a real launch" lens runs
(``cudalens.lsp.capture_action``), as a string split like a shell would (``shlex``, no shell
runs it) or a list of arguments; "" is unset (then ``[capture] command`` of the project file
counts, in a trusted workspace only).

``profile``: after an optimize job, ask the runner for an Nsight Compute profile of the
winner (else the baseline) and show it in the hover; where the runner cannot profile (no
ncu, counters not permitted, a runner without profiling) the run is kept without one.

``proposer``: ``builtin`` (the optimizer's passes), ``llm`` (the agent loop of
``cudalens.agent``), ``auto`` (the LLM when a model is configured and its server answers, else
the built-in passes; the job's progress says which ran). The ``llm`` values are one layer of
the agent's configuration (``cudalens.agent.config_file.load_agent_config``): the project file
(``cudalens.toml [agent]``) comes first, then these; a value left out (or null) keeps the
project file's or the default. ``apiKeyEnv`` is the NAME of the environment variable holding
the key, read by the server process; a key itself (``llm.apiKey``, or an ``apiKeyEnv`` that
looks like a key) is refused without being echoed. Budgets of 0 mean no limit.

A value of the wrong type is reported (``cudalens.budget.candidates: expected an integer
from 1 to 1000, found "many"``) and its default kept; unknown keys are ignored. The token is
a secret: ``Settings.__repr__`` hides it and it is never logged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Optional

SECTION = "cudalens"
PROPOSERS = ("auto", "builtin", "llm")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_LLM_KEYS = ("apiKey", "api_key", "key", "token", "secret", "password")
_ARCH = re.compile(r"^sm_\d{2,3}[a-z]?$")


@dataclass(frozen=True)
class Settings:
    """Parsed settings. Budgets: ``budget`` candidates at most, ``repetitions`` timed rounds;
    ``debounce_ms``: milliseconds of quiet after an edit before nvcc checks the file."""

    runner_url: str = ""
    runner_token: str = field(default="", repr=False)
    proposer: str = "auto"
    llm_model: str = ""
    llm_base_url: str = ""
    llm_api_key_env: str = ""
    llm_temperature: Optional[float] = None
    llm_candidates_per_round: Optional[int] = None
    llm_rounds: Optional[int] = None
    llm_time_budget_s: Optional[float] = None
    # kept out of repr only because the word "token" there would read like the runner token
    llm_token_budget: Optional[int] = field(default=None, repr=False)
    budget: int = 24
    repetitions: int = 50
    seed: int = 0
    check_enabled: bool = True
    arch: str = "sm_90"
    nvcc: str = "nvcc"
    nvcc_options: tuple[str, ...] = ()
    debounce_ms: int = 400
    profile: bool = True
    workspace_trusted: bool = False
    # the workspace folders of ``initialize`` (set by the session, not read from the client)
    workspace_roots: tuple[Path, ...] = ()
    sanitize: bool = True
    capture_command: tuple[str, ...] = ()

    def agent_settings(self) -> dict[str, Any]:
        """The ``llm`` values that were set, by ``AgentConfig`` field name (the editor's layer
        of the agent configuration; empty strings and None are left out)."""
        pairs = {"model": self.llm_model, "base_url": self.llm_base_url,
                 "api_key_env": self.llm_api_key_env, "temperature": self.llm_temperature,
                 "candidates_per_round": self.llm_candidates_per_round,
                 "rounds": self.llm_rounds, "time_budget_s": self.llm_time_budget_s,
                 "token_budget": self.llm_token_budget}
        return {k: v for k, v in pairs.items() if v is not None and v != ""}

    def runner_identity(self) -> tuple[str, str]:
        """What selects a runner connection: (url, token)."""
        return self.runner_url, self.runner_token


def _string(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _int_between(low: int, high: int) -> Callable[[Any], Optional[int]]:
    def parse(value: Any) -> Optional[int]:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return None
        return value
    parse.expected = f"an integer from {low} to {high}"  # type: ignore[attr-defined]
    return parse


def _bool(value: Any) -> Optional[bool]:
    return value if isinstance(value, bool) else None


def _choice(options: tuple[str, ...]) -> Callable[[Any], Optional[str]]:
    def parse(value: Any) -> Optional[str]:
        return value if value in options else None
    parse.expected = "one of " + ", ".join(repr(o) for o in options)  # type: ignore[attr-defined]
    return parse


def _arch(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and _ARCH.match(value) else None


def _number_between(low: float, high: float) -> Callable[[Any], Optional[float]]:
    def parse(value: Any) -> Optional[float]:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not low <= value <= high:
            return None
        return float(value)
    parse.expected = f"a number from {low:g} to {high:g}"  # type: ignore[attr-defined]
    return parse


def _env_name(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and _ENV_NAME.match(value) else None


def _url(value: Any) -> Optional[str]:
    if isinstance(value, str) and (value == "" or re.match(r"^https?://[^\s/]+", value)):
        return value
    return None


def _options(value: Any) -> Optional[tuple[str, ...]]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _command(value: Any) -> Optional[tuple[str, ...]]:
    import shlex

    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError:  # an unclosed quote
            return None
    return None


_command.expected = ("a command line (a string such as \"python train.py\", or a list of "  # type: ignore[attr-defined]
                     "arguments) with balanced quotes")
_string.expected = "a string"  # type: ignore[attr-defined]
_bool.expected = "true or false"  # type: ignore[attr-defined]
_arch.expected = "an architecture like 'sm_90'"  # type: ignore[attr-defined]
_options.expected = "a list of strings"  # type: ignore[attr-defined]
_env_name.expected = ("the NAME of an environment variable holding the key (letters, digits "  # type: ignore[attr-defined]
                      "and _, e.g. OPENAI_API_KEY), not the key")
_url.expected = "an http:// or https:// URL such as http://localhost:8000/v1"  # type: ignore[attr-defined]

# setting path (below "cudalens") -> (Settings field, parser)
_FIELDS: dict[tuple[str, ...], tuple[str, Callable[[Any], Any]]] = {
    ("runner", "url"): ("runner_url", _string),
    ("runner", "token"): ("runner_token", _string),
    ("proposer",): ("proposer", _choice(PROPOSERS)),
    ("llm", "model"): ("llm_model", _string),
    ("llm", "baseUrl"): ("llm_base_url", _url),
    ("llm", "apiKeyEnv"): ("llm_api_key_env", _env_name),
    ("llm", "temperature"): ("llm_temperature", _number_between(0.0, 2.0)),
    ("llm", "candidatesPerRound"): ("llm_candidates_per_round", _int_between(1, 16)),
    ("llm", "rounds"): ("llm_rounds", _int_between(1, 50)),
    ("llm", "timeBudgetSeconds"): ("llm_time_budget_s", _number_between(0, 86400)),
    ("llm", "tokenBudget"): ("llm_token_budget", _int_between(0, 100_000_000)),
    ("budget", "candidates"): ("budget", _int_between(1, 1000)),
    ("budget", "repetitions"): ("repetitions", _int_between(5, 10000)),
    ("budget", "seed"): ("seed", _int_between(0, 2**31 - 1)),
    ("check", "enabled"): ("check_enabled", _bool),
    ("check", "arch"): ("arch", _arch),
    ("check", "nvcc"): ("nvcc", _string),
    ("check", "options"): ("nvcc_options", _options),
    ("check", "debounceMs"): ("debounce_ms", _int_between(0, 60000)),
    ("profile",): ("profile", _bool),
    ("workspaceTrusted",): ("workspace_trusted", _bool),
    ("sanitize",): ("sanitize", _bool),
    ("capture", "command"): ("capture_command", _command),
}

assert {f for f, _ in _FIELDS.values()} | {"workspace_roots"} == {f.name for f in fields(Settings)}


def parse_settings(raw: Any, workspace_roots: tuple[Path, ...] = ()
                   ) -> tuple[Settings, list[str]]:
    """Settings from the client's ``cudalens`` object (None or {} give the defaults), and one
    message per rejected value; ``workspace_roots`` is kept in ``Settings.workspace_roots``."""
    if raw is None:
        return Settings(workspace_roots=workspace_roots), []
    if not isinstance(raw, dict):
        return Settings(workspace_roots=workspace_roots), [
            f"{SECTION}: expected an object of settings, found {type(raw).__name__}"]
    values: dict[str, Any] = {"workspace_roots": workspace_roots}
    problems: list[str] = []
    for path, (name, parse) in _FIELDS.items():
        node: Any = raw
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            continue
        value = parse(node)
        if value is None:
            problems.append(f"{SECTION}.{'.'.join(path)}: expected {parse.expected}, found "
                            f"{_shown(node, secret=name in _SECRET_FIELDS)}; using the default")
            continue
        values[name] = value
    llm = raw.get("llm")
    if isinstance(llm, dict):
        for key in _SECRET_LLM_KEYS:
            if key in llm:
                problems.append(f"{SECTION}.llm.{key}: an API key must not be written in settings "
                                f"(it would end up in files and logs); ignored. Put the key in an "
                                f"environment variable of the server and set "
                                f"{SECTION}.llm.apiKeyEnv to that variable's name")
    return Settings(**values), problems


_SECRET_FIELDS = ("runner_token", "llm_api_key_env")  # a wrong apiKeyEnv may be the key itself


def _shown(value: Any, secret: bool) -> str:
    if secret:
        return f"a {type(value).__name__}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- talking to the client -----------------------------------------------------------------

async def pull(server) -> Any:
    """The client's ``cudalens`` settings object via ``workspace/configuration`` (None when
    the client has none)."""
    from lsprotocol import types

    answer = await server.workspace_configuration_async(types.ConfigurationParams(
        items=[types.ConfigurationItem(section=SECTION)]))
    return answer[0] if answer else None


def pushed(settings: Any) -> Optional[Any]:
    """The ``cudalens`` object in a ``didChangeConfiguration`` notification's ``settings``,
    or None when the client did not push it (it expects to be asked)."""
    if isinstance(settings, dict) and SECTION in settings:
        return settings[SECTION]
    return None
