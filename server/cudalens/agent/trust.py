"""How far project files are looked for, which are trusted, and what is said when one is not.

Project files (``cudalens.toml``, a ``pyproject.toml`` with ``[tool.cudalens]``) are looked
for from the kernel's folder upwards, up to a root and never above it:

- command line: the repository root, the nearest folder at or above the kernel's that holds
  ``.git`` (a folder, or the file a worktree or submodule has); outside a repository, the
  kernel's own folder only;
- language server: the innermost workspace folder that holds the kernel; for a kernel outside
  every workspace folder, as on the command line.

A project file comes with the checkout, so it may not choose where the API key is sent
(``base_url``) or which environment variable is the key (``api_key_env``) unless the user
trusts it (``cudalens.agent.config.TRUST_KEYS``). It is trusted when

- it was named explicitly (``--agent-config FILE``);
- the user trusts the project for this run: ``--trust-project-config`` on the command line;
  the editor's workspace trust in the language server (``cudalens.workspaceTrusted``, which
  the VS Code extension sets from ``vscode.workspace.isTrusted``);
- its folder is at or below one listed in the user file's ``[trust] folders``.

The user file is ``$XDG_CONFIG_HOME/cudalens/config.toml`` (``~/.config/cudalens/config.toml``
when ``XDG_CONFIG_HOME`` is unset or not absolute, as the XDG base directory specification
says). Its ``[agent]`` table is a layer like the project file's, always trusted, applied
before the project file::

    [trust]
    folders = ["~/src/kernels"]

    [agent]
    base_url = "http://localhost:8000/v1"
    api_key_env = "VLLM_API_KEY"
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

from cudalens.agent.config import IgnoredSetting

USER_FILE = Path("cudalens") / "config.toml"


def user_config_path(environ: Mapping[str, str] = os.environ) -> Path:
    """The user file's path (it may not exist); see the module doc."""
    base = environ.get("XDG_CONFIG_HOME", "")
    if not base or not os.path.isabs(base):
        home = environ.get("HOME") or str(Path.home())
        base = os.path.join(home, ".config")
    return Path(base) / USER_FILE


def repository_root(folder: Path) -> Optional[Path]:
    """The nearest folder at or above ``folder`` (a resolved directory) holding ``.git``, or
    None outside a repository."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def search_root(folder: Path, workspace_roots: Sequence[Path] = ()) -> Path:
    """The highest folder a project file for a kernel in ``folder`` (a resolved directory) may
    be in: the innermost of ``workspace_roots`` holding it, else its repository root, else
    ``folder`` itself."""
    holding = [r.resolve() for r in workspace_roots if _within(folder, r.resolve())]
    if holding:
        return max(holding, key=lambda r: len(r.parts))
    return repository_root(folder) or folder


def folders_up_to(folder: Path, root: Path) -> list[Path]:
    """``folder`` and its parents up to ``root`` (inclusive), nearest first; only ``folder``
    when ``root`` is not above it."""
    if not _within(folder, root):
        return [folder]
    out = [folder]
    while out[-1] != root:
        out.append(out[-1].parent)
    return out


def trusted_folder(folder: Path, trusted: Iterable[Path]) -> Optional[Path]:
    """The entry of ``trusted`` (absolute, resolved folders) that ``folder`` is at or below,
    or None."""
    for entry in trusted:
        if _within(folder, entry):
            return entry
    return None


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _shown(values: list[IgnoredSetting]) -> str:
    parts = [f"{v.key} = {v.value!r}" for v in values]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def untrusted_warnings(ignored: Sequence[IgnoredSetting], how: str) -> list[str]:
    """One warning per untrusted layer that had values dropped, naming the file, each key and
    value, and ``how`` to trust it (``pass --trust-project-config, ...``)."""
    layers: dict[str, list[IgnoredSetting]] = {}
    for item in ignored:
        layers.setdefault(item.layer, []).append(item)
    return [f"{layer}: ignored {_shown(values)}: this project file is not trusted, and only a "
            f"trusted one may choose where the API key is sent or which variable holds it "
            f"(nothing was sent to a server it names); to trust it, {how}"
            for layer, values in layers.items()]


def cli_how(user_file: Path) -> str:
    """How to trust a project file from the command line (for ``untrusted_warnings``)."""
    return (f"pass --trust-project-config, or list its folder under [trust] folders in "
            f"{user_file}; or give --base-url and --api-key-env yourself")


def editor_how(user_file: Path) -> str:
    """How to trust a project file in the language server (for ``untrusted_warnings``)."""
    return ("trust the workspace (VS Code: 'Workspaces: Manage Workspace Trust'; other "
            "editors: set cudalens.workspaceTrusted to true), or list its folder under [trust] "
            f"folders in {user_file}; or set cudalens.llm.baseUrl and cudalens.llm.apiKeyEnv "
            f"in your user settings")
