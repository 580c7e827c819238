"""Project headers a kernel file includes from its own folder, for spec inference.

``#include "NAME"`` lines whose file sits beside the source (relative to its folder, no
``..``), one level deep, each read up to ``MAX_HEADER_BYTES``: their aliases (``typedef
__nv_bfloat16 floatX;``) and ``#define``s then count as the file's own. Headers found only
through include paths (``-I``) need the build's flags (``compile_commands.json``), which
this module does not read (``cudalens.build.project_header_files`` does, and
``target.file_context`` joins both).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Union

MAX_HEADER_BYTES = 1 << 20
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"(?P<name>[^"]+)"', re.MULTILINE)


def local_headers(source_path: Union[str, Path], text: str) -> tuple[str, ...]:
    """The texts of the headers ``text`` includes with quotes that exist beside
    ``source_path``, in include order. Unreadable or oversized headers are skipped."""
    return tuple(body for _, body in local_header_files(source_path, text))


def local_header_files(source_path: Union[str, Path], text: str) -> tuple[tuple[str, str], ...]:
    """(name as included, text) of each header ``local_headers`` reads, in include order."""
    folder = Path(source_path).parent
    out: list[tuple[str, str]] = []
    for m in _INCLUDE.finditer(text):
        name = m.group("name")
        if ".." in Path(name).parts or Path(name).is_absolute():
            continue
        path = folder / name
        try:
            if path.is_file() and path.stat().st_size <= MAX_HEADER_BYTES:
                out.append((name, path.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return tuple(out)
