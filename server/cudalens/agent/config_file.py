"""The project's configuration file and the layered loading of ``AgentConfig``.

The project file is the first of these found walking up from the kernel's directory:

- ``cudalens.toml``, table ``[agent]``;
- ``pyproject.toml`` with a ``[tool.cudalens]`` table, table ``[tool.cudalens.agent]``.

A ``cudalens.toml`` is the project's file even without an ``[agent]`` table (then it sets
nothing); a ``pyproject.toml`` without ``[tool.cudalens]`` is passed over. Example::

    [agent]
    base_url = "http://localhost:8000/v1"
    model = "qwen2.5-coder-32b"
    api_key_env = "VLLM_API_KEY"
    rounds = 3

    [agent.prices."qwen2.5-coder-32b"]
    input_per_mtok = 0.0
    output_per_mtok = 0.0
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping, Optional

from cudalens.agent.config import AgentConfig, ConfigError, Layer, merge

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PROJECT_FILE = "cudalens.toml"
PYPROJECT = "pyproject.toml"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the file ({exc})") from None


def _table(data: Mapping[str, Any], keys: tuple[str, ...], path: Path) -> Mapping[str, Any]:
    node: Any = data
    for i, key in enumerate(keys):
        node = node.get(key, {}) if isinstance(node, Mapping) else None
        if not isinstance(node, Mapping):
            where = ".".join(keys[: i + 1])
            raise ConfigError(f"{path}: [{where}] must be a table, found {node!r}")
    return node


def read_project_file(path: Path) -> Layer:
    """The agent settings of one ``cudalens.toml`` or ``pyproject.toml``.

    Raises:
        ConfigError: the file cannot be read, is not TOML, or its agent table is not a table.
    """
    data = _read_toml(path)
    if path.name == PYPROJECT:
        return Layer(f"{path} [tool.cudalens.agent]", _table(data, ("tool", "cudalens", "agent"),
                                                              path))
    return Layer(f"{path} [agent]", _table(data, ("agent",), path))


def find_project_file(start: Path) -> Optional[Path]:
    """The project file for a kernel file or directory ``start`` (see the module doc), or None."""
    here = start.resolve()
    if not here.is_dir():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
        pyproject = folder / PYPROJECT
        if pyproject.is_file():
            try:
                data = _read_toml(pyproject)
            except ConfigError:
                continue  # someone else's broken pyproject is not ours to report
            if isinstance(data.get("tool"), Mapping) and "cudalens" in data["tool"]:
                return pyproject
    return None


def load_agent_config(*, start: Optional[Path] = None, config_file: Optional[Path] = None,
                      settings: Optional[Mapping[str, Any]] = None,
                      cli: Optional[Mapping[str, Any]] = None) -> AgentConfig:
    """Defaults, then the project file, then editor ``settings``, then ``cli`` values.

    start: the kernel file (or its folder) from which the project file is looked up;
        ``config_file`` names the file instead (``cudalens.toml`` or ``pyproject.toml``).
    settings: the language server's ``agent`` settings (snake_case or camelCase keys).
    cli: command-line values by field name; None values (options not given) are skipped.

    Raises:
        ConfigError: ``config_file`` is missing; any layer has an unknown key, a secret or an
            unusable value (the message names the layer and the key).
    """
    layers: list[Layer] = []
    if config_file is not None:
        if not config_file.is_file():
            raise ConfigError(f"{config_file}: no such configuration file")
        layers.append(read_project_file(config_file))
    elif start is not None:
        found = find_project_file(start)
        if found is not None:
            layers.append(read_project_file(found))
    if settings:
        layers.append(Layer("editor settings (cudalens.agent)", settings))
    if cli:
        layers.append(Layer("command line", {k: v for k, v in cli.items() if v is not None}))
    return merge(layers)
