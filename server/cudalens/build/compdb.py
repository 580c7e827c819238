"""Reading ``compile_commands.json`` (CMake's ``CMAKE_EXPORT_COMPILE_COMMANDS``, Bear).

The file is a JSON list of entries ``{"directory", "file", "command" | "arguments"}``;
``command`` is one shell-quoted string (split with ``shlex``), ``arguments`` a list. A relative
``file`` and relative folders in the command are relative to ``directory``.

``find_compdb`` looks for it walking up from a file: in each folder ``compile_commands.json``,
then ``build/compile_commands.json``, up to the repository or workspace root as for the project
file (``cudalens.agent.trust.search_root``: outside a repository, the file's own folder only).
``entry_for`` picks the entry of a file by exact path, else (a header, a file the build does not
list) the entry whose file's folder shares the longest leading path with it.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from cudalens.errors import CudalensError

COMPDB = "compile_commands.json"


class CompdbError(CudalensError):
    """A ``compile_commands.json`` that cannot be read (message names the file and entry)."""


@dataclass(frozen=True)
class Entry:
    """One compile command: ``file`` and ``directory`` absolute, ``arguments`` split."""

    directory: str
    file: str
    arguments: tuple[str, ...]


def find_compdb(start: Path, workspace_roots: Sequence[Path] = ()) -> Optional[Path]:
    """The ``compile_commands.json`` for file or folder ``start`` (see the module doc)."""
    from cudalens.agent import trust  # noqa: PLC0415

    here = start.resolve()
    if not here.is_dir():
        here = here.parent
    for folder in trust.folders_up_to(here, trust.search_root(here, workspace_roots)):
        for candidate in (folder / COMPDB, folder / "build" / COMPDB):
            if candidate.is_file():
                return candidate
    return None


def load_compdb(path: Path) -> list[Entry]:
    """The entries of ``path``. Raises CompdbError for a file that is not JSON or an entry
    without ``directory``/``file`` or without ``command``/``arguments`` (naming its index).
    Read once per version of the file (its size and modification time): the editor checks
    on every edit."""
    try:
        st = path.stat()
    except OSError as exc:
        raise CompdbError(f"{path}: cannot read the compilation database ({exc})") from None
    return list(_load(str(path.resolve()), st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=16)
def _load(name: str, _mtime: int, _size: int) -> tuple[Entry, ...]:
    path = Path(name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CompdbError(f"{path}: cannot read the compilation database ({exc})") from None
    if not isinstance(data, list):
        raise CompdbError(f"{path}: expected a JSON list of compile commands, found "
                          f"{type(data).__name__}")
    out = []
    for i, e in enumerate(data):
        where = f"{path}: entry {i}"
        if not isinstance(e, dict) or not isinstance(e.get("directory"), str) \
                or not isinstance(e.get("file"), str):
            raise CompdbError(f"{where}: expected an object with string 'directory' and 'file'")
        directory = os.path.normpath(os.path.join(path.parent, e["directory"]))
        if isinstance(e.get("arguments"), list) and all(isinstance(a, str)
                                                        for a in e["arguments"]):
            args = tuple(e["arguments"])
        elif isinstance(e.get("command"), str):
            try:
                args = tuple(shlex.split(e["command"]))
            except ValueError as exc:
                raise CompdbError(f"{where}: cannot split 'command' ({exc})") from None
        else:
            raise CompdbError(f"{where}: expected 'arguments' (a list of strings) or 'command' "
                              f"(a string)")
        out.append(Entry(directory, os.path.normpath(os.path.join(directory, e["file"])), args))
    return tuple(out)


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def entry_for(entries: Sequence[Entry], file: Path) -> Optional[Entry]:
    """The entry compiling ``file`` (exact path, links resolved), else the nearest one by
    folder (longest shared leading path; the first on a tie), else None when there are none."""
    target = _real(str(file))
    for e in entries:
        if _real(e.file) == target:
            return e
    best, best_len = None, -1
    for e in entries:
        shared = len(os.path.commonpath([target, os.path.dirname(_real(e.file))]))
        if shared > best_len:
            best, best_len = e, shared
    return best
