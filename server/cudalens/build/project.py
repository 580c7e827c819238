"""A kernel file's build: its flags from ``compile_commands.json``, else from the ``[build]``
table of the project's ``cudalens.toml`` (or ``[tool.cudalens.build]`` of ``pyproject.toml``).

``[build]`` keys (paths relative to the file holding the table)::

    [build]
    include_dirs = ["include", "third_party/cub"]
    defines = { TILE = 32, USE_BF16 = true, NAME = "value" }   # or ["TILE=32", "USE_BF16"]
    std = "c++17"
    options = ["--expt-relaxed-constexpr", "--extended-lambda"]

A project file is the project's own text, so its flags are used locally, but only flag kinds
of the allow-list: folders, macros (one-line values), ``c++NN`` and the options of
``cudalens.build.flags.EXTRA_OPTIONS``. Anything else (``-o``, ``-Xcompiler``, ``-ccbin``...)
is refused with a ``ConfigError`` naming it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from cudalens.agent.config import ConfigError
from cudalens.errors import CudalensError
from cudalens.agent.config_file import PYPROJECT, _read_toml, find_project_file
from cudalens.agent.trust import repository_root
from cudalens.build.compdb import COMPDB, CompdbError, entry_for, find_compdb, load_compdb
from cudalens.build.flags import (
    EXTRA_OPTIONS, BuildFlagError, BuildFlags, integer_defines, parse_arguments,
)

_KEYS = ("include_dirs", "defines", "std", "options")


@dataclass(frozen=True)
class ProjectBuild:
    """``flags`` of one file and the project's ``root`` folder (absolute): headers under it
    are the project's own and travel to the runner; headers elsewhere stay there."""

    flags: BuildFlags
    root: Path


def _compdb_root(compdb: Path) -> Path:
    folder = compdb.resolve().parent
    return folder.parent if folder.name == "build" else folder


def _define_entry(name: str, value: Any, where: str) -> tuple[str, Optional[str]]:
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise ConfigError(f"{where}: defines: expected a C macro name, found {name!r}")
    if isinstance(value, bool):
        return name, "1" if value else "0"
    if isinstance(value, int):
        return name, str(value)
    if isinstance(value, str) and "\n" not in value:
        return name, value
    raise ConfigError(f"{where}: defines.{name}: expected an integer, a boolean or a one-line "
                      f"string, found {value!r}")


def flags_from_table(table: Mapping[str, Any], folder: Path, where: str) -> BuildFlags:
    """The flags of a ``[build]`` table read from a file in ``folder`` (named ``where`` in
    messages). Raises ConfigError for an unknown key or a value outside the allow-list."""
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; expected "
                          f"{', '.join(_KEYS)}")
    dirs = table.get("include_dirs", [])
    if not isinstance(dirs, list) or not all(isinstance(d, str) and d for d in dirs):
        raise ConfigError(f"{where}: include_dirs: expected a list of folder names, found "
                          f"{dirs!r}")
    raw = table.get("defines", {})
    defines: list[tuple[str, Optional[str]]] = []
    if isinstance(raw, Mapping):
        defines = [_define_entry(k, v, where) for k, v in raw.items()]
    elif isinstance(raw, list) and all(isinstance(d, str) for d in raw):
        for d in raw:
            name, eq, value = d.partition("=")
            defines.append(_define_entry(name, value, where) if eq else
                           _define_entry(name, True, where)[:1] + (None,))
    else:
        raise ConfigError(f"{where}: defines: expected a table NAME = VALUE or a list of "
                          f"'NAME=VALUE', found {raw!r}")
    std = table.get("std")
    if std is not None and not (isinstance(std, str) and re.fullmatch(r"c\+\+\d\d", std)):
        raise ConfigError(f"{where}: std: expected 'c++NN' (c++17, c++20), found {std!r}")
    options = table.get("options", [])
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise ConfigError(f"{where}: options: expected a list of strings, found {options!r}")
    for opt in options:
        if not any(re.fullmatch(p, opt) for p in EXTRA_OPTIONS):
            raise ConfigError(
                f"{where}: options: '{opt}' is not an option cudalens passes from a project "
                f"file; accepted: --expt-relaxed-constexpr, --extended-lambda, -use_fast_math, "
                f"-ftz=/-prec-div=/-prec-sqrt=/-fmad= true|false, -restrict, "
                f"-extra-device-vectorization (folders go in include_dirs, macros in defines)")
    return BuildFlags(
        include_dirs=tuple(os.path.normpath(os.path.join(folder, d)) for d in dirs),
        defines=tuple(defines), std=std, extra=tuple(options), origin=where)


def _table_flags(project_file: Path) -> Optional[BuildFlags]:
    data = _read_toml(project_file)
    keys = ("tool", "cudalens", "build") if project_file.name == PYPROJECT else ("build",)
    node: Any = data
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    if node is None:
        return None
    where = f"{project_file} [{'.'.join(keys)}]"
    if not isinstance(node, Mapping):
        raise ConfigError(f"{where} must be a table, found {node!r}")
    return flags_from_table(node, project_file.resolve().parent, where)


def build_for(path: Path, *, compdb: Optional[Path] = None) -> ProjectBuild:
    """The build of CUDA file ``path``: the entry of ``compdb`` (default: ``find_compdb``)
    for it (exact, else nearest), else the project file's ``[build]`` table, else no flags.
    The root: the database's project (``build/``'s parent), the project file's folder, the
    repository holding the file (its ``.git``), else the file's folder.

    Raises CompdbError (an unreadable database, a malformed ``-D``) and ConfigError (the
    project file or its table)."""
    file = path.resolve()
    db = compdb if compdb is not None else find_compdb(file)
    if db is not None:
        entry = entry_for(load_compdb(db), file)
        if entry is not None:
            how = "entry for" if os.path.realpath(entry.file) == str(file) else "nearest entry,"
            try:
                flags = parse_arguments(entry.arguments, entry.directory,
                                        f"{db} ({how} {entry.file})")
            except BuildFlagError as exc:

                raise CompdbError(str(exc)) from None
            return ProjectBuild(flags, _compdb_root(db))
    project_file = find_project_file(file)
    if project_file is not None:
        flags = _table_flags(project_file)
        if flags is not None:
            return ProjectBuild(flags, project_file.resolve().parent)
    if db is not None:
        return ProjectBuild(BuildFlags(), _compdb_root(db))
    if project_file is not None:
        return ProjectBuild(BuildFlags(), project_file.resolve().parent)
    # no build named: the repository holding the file is the project (a kernel that
    # includes "../common/x.h" finds its headers there), else the file's own folder
    return ProjectBuild(BuildFlags(), repository_root(file.parent) or file.parent)


def build_defines(path: Path, *, compdb: Optional[Path] = None) -> dict[str, int]:
    """The build's integer ``-D`` values for ``path`` (name -> value), for spec expressions
    (``defines=`` of spec inference and resolution). {} when the build cannot be read."""
    try:
        return integer_defines(build_for(path, compdb=compdb).flags)
    except (CudalensError, OSError):  # inference goes on without them
        return {}





def build_macro_values(path: Path, *, compdb: Optional[Path] = None) -> dict[str, str]:
    """Every ``-D`` value of the build of ``path`` after its ``-U``s (``BuildFlags.define_values``:
    ``-DNAME`` is ``"1"``), integer or not (``-DDATA_TYPE=double``), for the macros the passes
    and spec inference expand. {} when the build cannot be read."""
    try:
        return build_for(path, compdb=compdb).flags.define_values()
    except (CudalensError, OSError):
        return {}


def local_nvcc_options(path: Path, *, compdb: Optional[Path] = None) -> tuple[str, ...]:
    """The build's options for a local nvcc compiling ``path`` (``BuildFlags.nvcc_options``:
    absolute folders, macros, dialect, extra options). Raises as ``build_for``."""
    return tuple(build_for(path, compdb=compdb).flags.nvcc_options())
