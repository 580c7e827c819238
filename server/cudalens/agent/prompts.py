"""The prompts: text files in ``cudalens/agent/prompts/`` with ``{{name}}`` placeholders.

``render(name, **values)`` fills every placeholder of the file in one pass (a value that itself
contains ``{{...}}``, such as a kernel, is inserted as it is, never expanded). It refuses a
missing value and a value the template does not use, so a renamed placeholder cannot silently
leave ``{{...}}`` in a prompt or drop a fact. The tool definitions offered to the model are in
``prompts/tools.json`` (``tool_definitions``).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

PLACEHOLDER = re.compile(r"\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}")
PROMPTS = ("system", "format_fenced", "format_tools", "task", "retry", "feedback")


class PromptError(ValueError):
    """A prompt file is missing, or values do not match its placeholders."""


@lru_cache(maxsize=None)
def template(name: str) -> str:
    """The text of ``prompts/<name>.md``.

    Raises:
        PromptError: no such prompt file in the package.
    """
    path = resources.files("cudalens.agent") / "prompts" / f"{name}.md"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptError(f"no prompt file prompts/{name}.md in the cudalens.agent package "
                          f"(prompts: {', '.join(PROMPTS)})") from None


def placeholders(name: str) -> set[str]:
    """The placeholder names used in prompt ``name``."""
    return set(PLACEHOLDER.findall(template(name)))


def render(name: str, **values: Any) -> str:
    """Prompt ``name`` with each ``{{key}}`` replaced by ``str(values[key])``.

    Raises:
        PromptError: a placeholder has no value, or a value has no placeholder (both named).
    """
    text = template(name)
    wanted = placeholders(name)
    missing = sorted(wanted - set(values))
    unused = sorted(set(values) - wanted)
    if missing or unused:
        raise PromptError(f"prompt {name}.md: "
                          + "; ".join(filter(None, [
                              missing and f"no value for {', '.join(missing)}",
                              unused and f"no placeholder for {', '.join(unused)}"])))
    return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text).strip() + "\n"


@lru_cache(maxsize=None)
def _tools_text() -> str:
    return (resources.files("cudalens.agent") / "prompts" / "tools.json").read_text(
        encoding="utf-8")


def tool_definitions() -> list[dict[str, Any]]:
    """The tools offered to the model (chat-completions ``tools``), a fresh copy each call."""
    return json.loads(_tools_text())


def tool_names() -> tuple[str, ...]:
    return tuple(t["function"]["name"] for t in tool_definitions())
