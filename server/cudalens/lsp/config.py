"""The server's settings: what the client sends under the ``cudalens`` section.

Read with ``workspace/configuration`` (section ``cudalens``) after ``initialized`` and again
on every ``workspace/didChangeConfiguration``; a client that pushes settings in that
notification (``{"cudalens": {...}}``) is read directly. Shape, with defaults::

    {
      "runner":   {"url": "", "token": ""},     # "" url: the local GPU, in-process runner
      "proposer": "builtin",                      # or "llm"
      "llm":      {"model": "", "baseUrl": ""},   # the API key comes from OPENAI_API_KEY only
      "budget":   {"candidates": 24, "repetitions": 50, "seed": 0},
      "check":    {"enabled": true, "arch": "sm_90", "nvcc": "nvcc", "options": [],
                   "debounceMs": 400}
    }

A value of the wrong type is reported (``cudalens.budget.candidates: expected an integer
from 1 to 1000, found "many"``) and its default kept; unknown keys are ignored. The token is
a secret: ``Settings.__repr__`` hides it and it is never logged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Optional

SECTION = "cudalens"
PROPOSERS = ("builtin", "llm")
_ARCH = re.compile(r"^sm_\d{2,3}[a-z]?$")


@dataclass(frozen=True)
class Settings:
    """Parsed settings. Budgets: ``budget`` candidates at most, ``repetitions`` timed rounds;
    ``debounce_ms``: milliseconds of quiet after an edit before nvcc checks the file."""

    runner_url: str = ""
    runner_token: str = field(default="", repr=False)
    proposer: str = "builtin"
    llm_model: str = ""
    llm_base_url: str = ""
    budget: int = 24
    repetitions: int = 50
    seed: int = 0
    check_enabled: bool = True
    arch: str = "sm_90"
    nvcc: str = "nvcc"
    nvcc_options: tuple[str, ...] = ()
    debounce_ms: int = 400

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


def _options(value: Any) -> Optional[tuple[str, ...]]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


_string.expected = "a string"  # type: ignore[attr-defined]
_bool.expected = "true or false"  # type: ignore[attr-defined]
_arch.expected = "an architecture like 'sm_90'"  # type: ignore[attr-defined]
_options.expected = "a list of strings"  # type: ignore[attr-defined]

# setting path (below "cudalens") -> (Settings field, parser)
_FIELDS: dict[tuple[str, ...], tuple[str, Callable[[Any], Any]]] = {
    ("runner", "url"): ("runner_url", _string),
    ("runner", "token"): ("runner_token", _string),
    ("proposer",): ("proposer", _choice(PROPOSERS)),
    ("llm", "model"): ("llm_model", _string),
    ("llm", "baseUrl"): ("llm_base_url", _string),
    ("budget", "candidates"): ("budget", _int_between(1, 1000)),
    ("budget", "repetitions"): ("repetitions", _int_between(5, 10000)),
    ("budget", "seed"): ("seed", _int_between(0, 2**31 - 1)),
    ("check", "enabled"): ("check_enabled", _bool),
    ("check", "arch"): ("arch", _arch),
    ("check", "nvcc"): ("nvcc", _string),
    ("check", "options"): ("nvcc_options", _options),
    ("check", "debounceMs"): ("debounce_ms", _int_between(0, 60000)),
}

assert {f for f, _ in _FIELDS.values()} == {f.name for f in fields(Settings)}


def parse_settings(raw: Any) -> tuple[Settings, list[str]]:
    """Settings from the client's ``cudalens`` object (None or {} give the defaults), and one
    message per rejected value."""
    if raw is None:
        return Settings(), []
    if not isinstance(raw, dict):
        return Settings(), [f"{SECTION}: expected an object of settings, found "
                            f"{type(raw).__name__}"]
    values: dict[str, Any] = {}
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
                            f"{_shown(node, secret=name == 'runner_token')}; using the default")
            continue
        values[name] = value
    return Settings(**values), problems


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
