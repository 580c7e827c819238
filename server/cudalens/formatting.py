"""Formatting a rewritten kernel with the workspace's ``.clang-format``.

When the file being optimized has a ``.clang-format`` (or ``_clang-format``) in its directory
or a parent, a candidate's kernel is formatted with it, so the code a user accepts reads like
the rest of the project. Only the kernel's lines are formatted (``clang-format --lines``);
every other line of the file stays byte for byte as it was.

clang-format comes from its PyPI wheel (the optional extra ``cudalens[format]``, module
``clang_format``), else from ``PATH``. Without a style file nothing is formatted; with a style
file but no clang-format, the text is left as generated (``find_clang_format`` says why).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from cudalens.textfile import from_bytes, to_bytes

STYLE_FILES = (".clang-format", "_clang-format")
TIMEOUT_S = 30


class FormatError(RuntimeError):
    """clang-format failed; the message holds the command's status and its stderr."""


@dataclass(frozen=True)
class LineRange:
    """Lines ``first..last`` of a file, 1-based and inclusive (clang-format's ``--lines``)."""

    first: int
    last: int


def find_style_file(source_path: str | Path) -> Optional[Path]:
    """The ``.clang-format`` that clang-format's ``--style=file`` uses for ``source_path``:
    the first one in its directory or a parent, or None."""
    start = Path(source_path).resolve().parent
    for folder in (start, *start.parents):
        for name in STYLE_FILES:
            candidate = folder / name
            if candidate.is_file():
                return candidate
    return None


@lru_cache(maxsize=1)
def find_clang_format() -> Optional[str]:
    """The clang-format executable: the PyPI wheel's (``clang_format.get_executable``), else
    the one on ``PATH``, else None."""
    try:
        import clang_format  # type: ignore[import-not-found]
        exe = clang_format.get_executable("clang-format")
        if Path(exe).is_file():
            return exe
    except (ImportError, AttributeError):
        pass
    return shutil.which("clang-format")


def format_lines(text: str, source_path: str | Path, lines: LineRange,
                 executable: Optional[str] = None) -> str:
    """``text`` (the contents of ``source_path``) with ``lines`` formatted by clang-format in
    the style of the ``.clang-format`` that applies to ``source_path``.

    Raises:
        FormatError: no clang-format is found, or it exits non-zero or times out.
    """
    exe = executable or find_clang_format()
    if exe is None:
        raise FormatError("clang-format not found: install cudalens[format] (the clang-format "
                          "wheel) or put clang-format on PATH")
    cmd = [exe, "--style=file", f"--assume-filename={Path(source_path).resolve()}",
           f"--lines={lines.first}:{lines.last}"]
    try:
        proc = subprocess.run(cmd, input=to_bytes(text), capture_output=True,
                              timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise FormatError(f"clang-format on {source_path} lines {lines.first}-{lines.last} "
                          f"took more than {TIMEOUT_S} s") from None
    if proc.returncode != 0:
        raise FormatError(f"clang-format on {source_path} lines {lines.first}-{lines.last} "
                          f"exited {proc.returncode}: {proc.stderr.decode('utf-8', 'replace')}")
    return from_bytes(proc.stdout)


def kernel_lines(text: str, source_path: str | Path, kernel: str) -> LineRange:
    """The lines of ``kernel``'s definition in ``text`` (template header and attributes
    included). Raises KeyError when the file defines no such kernel."""
    from cudalens.source.parser import parse_source

    k = parse_source(text, str(source_path)).kernel(kernel)
    data = to_bytes(text)
    first = data.count(b"\n", 0, k.start_byte) + 1
    last = data.count(b"\n", 0, k.end_byte) + 1
    return LineRange(first, last)


def format_kernel(text: str, source_path: str | Path, kernel: str) -> str:
    """``text`` with ``kernel``'s definition formatted by the workspace's ``.clang-format``;
    ``text`` unchanged when no style file applies to ``source_path`` or no clang-format is
    installed.

    Raises:
        KeyError: the file defines no kernel named ``kernel``.
        FormatError: clang-format ran and failed.
    """
    if find_style_file(source_path) is None:
        return text
    exe = find_clang_format()
    if exe is None:
        return text
    return format_lines(text, source_path, kernel_lines(text, source_path, kernel), exe)
