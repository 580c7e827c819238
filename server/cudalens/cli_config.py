"""``cudalens config FILE``: the LLM proposer's configuration for a kernel, each value with the
file (or option) that set it, the files that were looked at, and what an untrusted project
file set that was ignored. Nothing is contacted; the API key is never shown (only whether its
variable is set)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Optional

import click

from cudalens.agent.config import KEYS, OPENAI_BASE_URL, AgentConfig
from cudalens.agent.config_file import Sources
from cudalens.errors import CudalensError


def _value(config: AgentConfig, key: str) -> str:
    value: Any = getattr(config, key)
    if key == "base_url" and value is None:
        return f"{OPENAI_BASE_URL} (OpenAI's)"
    if key == "api_key_env":
        state = "set" if config.api_key(os.environ) else "not set"
        return f"{value} ({state} in this environment)"
    if key == "prices":
        return ", ".join(sorted(value)) if value else "(none)"
    if value is None:
        return "(none)"
    return str(value)


def describe(file: Path, sources: Sources, config: AgentConfig) -> list[str]:
    """The lines ``cudalens config FILE`` prints (see the module doc)."""
    user = sources.user
    lines = [f"user file: {user.path}" + ("" if user.exists else " (none there)")]
    if sources.project is None:
        where = (f" (looked for from {file.resolve().parent} up to {sources.root})"
                 if sources.root is not None else "")
        lines.append(f"project file: none{where}")
    else:
        trusted = "trusted" if sources.trusted else "NOT trusted"
        lines.append(f"project file: {sources.project} ({trusted}: {sources.why})")
    width = max(len(k) for k in KEYS)
    for key in KEYS:
        lines.append(f"  {key:<{width}} = {_value(config, key)}    [{config.origin(key)}]")
    for item in config.ignored:
        lines.append(f"  ignored: {item.key} = {item.value!r}    [{item.layer}, not trusted]")
    return lines


@click.command("config")
@click.argument("file", type=click.Path(path_type=Path))
def _config_command(file: Path, **options: Any) -> None:
    """Show the LLM settings that apply to FILE, which file or option set each, and which
    project file was found and whether it is trusted."""
    from rich.console import Console
    from rich.markup import escape

    from cudalens.cli_agent import config_from_cli, config_warnings, sources_from_cli

    err = Console(stderr=True)
    if not file.exists() or not file.is_file():
        what = "no such file" if not file.exists() else \
            "expected a CUDA source file, found a directory or special file"
        err.print(f"[bold red]error:[/bold red] {escape(f'{file}: {what}')}", highlight=False,
                  soft_wrap=True)
        sys.exit(2)
    trust_flag = options.pop("trust_project_config", False)
    agent_config: Optional[Path] = options.pop("agent_config", None)
    try:
        sources = sources_from_cli(file, agent_config=agent_config,
                                   trust_project_config=trust_flag)
        config = config_from_cli(file, sources=sources, **options)
    except CudalensError as exc:
        err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", highlight=False,
                  soft_wrap=True)
        sys.exit(2)
    for line in describe(file, sources, config):
        click.echo(line)
    for warning in config_warnings(config):
        err.print(escape(f"warning: {warning}"), highlight=False, soft_wrap=True)


def register(main_group: click.Group) -> None:
    """Adds ``config`` to the ``cudalens`` command group."""
    from cudalens.cli_agent import config_options

    main_group.add_command(config_options(_config_command))
