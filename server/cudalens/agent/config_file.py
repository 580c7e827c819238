"""The project's configuration file and the layered loading of ``AgentConfig``.

The project file is the first of these found walking up from the kernel's directory, up to
the repository or workspace root and never above it (``cudalens.agent.trust``):

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

``base_url`` and ``api_key_env`` of a project file the user has not trusted are ignored (see
``cudalens.agent.trust`` for how to trust one, and for the user file, whose ``[agent]`` table
comes before the project file's).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from cudalens.agent import trust
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


def read_project_file(path: Path, trusted: bool = True) -> Layer:
    """The agent settings of one ``cudalens.toml`` or ``pyproject.toml``.

    Raises:
        ConfigError: the file cannot be read, is not TOML, or its agent table is not a table.
    """
    data = _read_toml(path)
    if path.name == PYPROJECT:
        return Layer(f"{path} [tool.cudalens.agent]", _table(data, ("tool", "cudalens", "agent"),
                                                              path), trusted)
    return Layer(f"{path} [agent]", _table(data, ("agent",), path), trusted)


def find_project_file(start: Path, workspace_roots: Sequence[Path] = ()) -> Optional[Path]:
    """The project file for a kernel file or directory ``start`` (see the module doc), or None.
    The search stops at ``trust.search_root(folder, workspace_roots)``."""
    here = start.resolve()
    if not here.is_dir():
        here = here.parent
    for folder in trust.folders_up_to(here, trust.search_root(here, workspace_roots)):
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


@dataclass(frozen=True)
class UserFile:
    """The user file (``trust.user_config_path``): its ``path``, whether it ``exists``, its
    ``[agent]`` values and its ``[trust] folders`` (absolute, resolved)."""

    path: Path
    exists: bool
    agent: Mapping[str, Any]
    trusted_folders: tuple[Path, ...]


def read_user_file(environ: Mapping[str, str] = os.environ) -> UserFile:
    """The user file; an empty one when it does not exist.

    Raises:
        ConfigError: it is not TOML, its tables are not tables, or ``[trust] folders`` is not
            a list of absolute (or ``~``) folder paths.
    """
    path = trust.user_config_path(environ)
    if not path.is_file():
        return UserFile(path, False, {}, ())
    data = _read_toml(path)
    folders = _table(data, ("trust",), path).get("folders", [])
    if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):
        raise ConfigError(f"{path}: [trust] folders: expected a list of folder paths, "
                          f"found {folders!r}")
    home = environ.get("HOME") or str(Path.home())
    resolved = []
    for entry in folders:
        expanded = home + entry[1:] if entry == "~" or entry.startswith("~/") else entry
        if not os.path.isabs(expanded):
            raise ConfigError(f"{path}: [trust] folders: expected absolute folder paths (or "
                              f"~/...), found {entry!r}")
        resolved.append(Path(expanded).resolve())
    return UserFile(path, True, _table(data, ("agent",), path), tuple(resolved))


@dataclass(frozen=True)
class Sources:
    """Where the configuration of one kernel comes from.

    user: the user file. project: the project file, or None. root: the highest folder the
    project file was looked for in (None when ``--agent-config`` named it). trusted: whether
    the project file may set ``TRUST_KEYS``; ``why`` says why it is or is not trusted.
    """

    user: UserFile
    project: Optional[Path]
    root: Optional[Path]
    trusted: bool
    why: str


def find_sources(*, start: Optional[Path] = None, config_file: Optional[Path] = None,
                 workspace_roots: Sequence[Path] = (), trust_project: bool = False,
                 trust_reason: str = "--trust-project-config",
                 environ: Mapping[str, str] = os.environ) -> Sources:
    """The user file and the project file for a kernel ``start`` (see ``load_agent_config``).

    Raises:
        ConfigError: ``config_file`` is missing, or the user file is unusable.
    """
    user = read_user_file(environ)
    if config_file is not None:
        if not config_file.is_file():
            raise ConfigError(f"{config_file}: no such configuration file")
        return Sources(user, config_file, None, True, "named with --agent-config")
    if start is None:
        return Sources(user, None, None, False, "no kernel given")
    here = start.resolve()
    folder = here if here.is_dir() else here.parent
    root = trust.search_root(folder, workspace_roots)
    found = find_project_file(start, workspace_roots)
    if found is None:
        return Sources(user, None, root, False, "no project file")
    if trust_project:
        return Sources(user, found, root, True, f"trusted by {trust_reason}")
    entry = trust.trusted_folder(found.resolve().parent, user.trusted_folders)
    if entry is not None:
        return Sources(user, found, root, True, f"under {entry}, trusted in {user.path}")
    return Sources(user, found, root, False, f"not trusted for this run, and not under a folder "
                                             f"listed in [trust] folders of {user.path}")


def load_agent_config(*, start: Optional[Path] = None, config_file: Optional[Path] = None,
                      settings: Optional[Mapping[str, Any]] = None,
                      cli: Optional[Mapping[str, Any]] = None,
                      workspace_roots: Sequence[Path] = (), trust_project: bool = False,
                      trust_reason: str = "--trust-project-config",
                      environ: Mapping[str, str] = os.environ,
                      sources: Optional[Sources] = None) -> AgentConfig:
    """Defaults, then the user file, then the project file, then editor ``settings``, then
    ``cli`` values.

    start: the kernel file (or its folder) from which the project file is looked up (up to
        ``trust.search_root``); ``config_file`` names the file instead (``cudalens.toml`` or
        ``pyproject.toml``; it is trusted).
    settings: the language server's ``agent`` settings (snake_case or camelCase keys).
    cli: command-line values by field name; None values (options not given) are skipped.
    workspace_roots: the editor's workspace folders (empty on the command line).
    trust_project: the user trusts the project file found (``trust_reason`` says how); else
        it is trusted only under a folder the user file trusts, and its ``base_url`` and
        ``api_key_env`` are dropped (``AgentConfig.ignored``).
    environ: where ``XDG_CONFIG_HOME`` and ``HOME`` are read (for the user file).
    sources: ``find_sources``'s answer, when the caller has it already.

    Raises:
        ConfigError: ``config_file`` is missing; any layer has an unknown key, a secret or an
            unusable value (the message names the layer and the key).
    """
    if sources is None:
        sources = find_sources(start=start, config_file=config_file,
                               workspace_roots=workspace_roots, trust_project=trust_project,
                               trust_reason=trust_reason, environ=environ)
    layers: list[Layer] = []
    if sources.user.agent:
        layers.append(Layer(f"{sources.user.path} [agent]", sources.user.agent))
    if sources.project is not None:
        layers.append(read_project_file(sources.project, sources.trusted))
    if settings:
        layers.append(Layer("editor settings (cudalens.agent)", settings))
    if cli:
        layers.append(Layer("command line", {k: v for k, v in cli.items() if v is not None}))
    return merge(layers)
