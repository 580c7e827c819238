"""Map a line of generated PTX back to the CUDA source line it came from.

ptxas reports errors in inline ``asm`` (and a few others) against the PTX nvcc generated
(``ptxas /tmp/x.ptx, line 61; error : ...``). When the PTX carries line information
(nvcc ``-lineinfo`` or ``-G``), each instruction is preceded by ``.loc FILE LINE COLUMN``
and the files are declared as ``.file N "path"`` (PTX ISA, "Debugging Directives":
``.loc``, ``.file``). The source line of PTX line L is the last ``.loc`` at or above L.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LOC = re.compile(r"^\s*\.loc\s+(?P<file>\d+)\s+(?P<line>\d+)(?:\s+(?P<col>\d+))?")
_FILE = re.compile(r'^\s*\.file\s+(?P<file>\d+)\s+"(?P<path>(?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class SourceLocation:
    path: str
    line: int  # 1-based
    column: int | None  # 1-based; None when the .loc gave 0 (unknown)


def ptx_source_location(ptx_text: str, ptx_line: int) -> SourceLocation | None:
    """Source location of 1-based ``ptx_line`` in ``ptx_text``.

    Returns ``None`` when the PTX has no ``.loc`` at or above that line, or the ``.loc``
    names a file with no ``.file`` declaration.
    """
    lines = ptx_text.splitlines()
    files: dict[int, str] = {}
    for text in lines:
        m = _FILE.match(text)
        if m:
            files[int(m.group("file"))] = re.sub(r"\\(.)", r"\1", m.group("path"))
    for i in range(min(ptx_line, len(lines)) - 1, -1, -1):
        m = _LOC.match(lines[i])
        if m:
            path = files.get(int(m.group("file")))
            if path is None:
                return None
            col = int(m.group("col")) if m.group("col") else 0
            return SourceLocation(path, int(m.group("line")), col or None)
    return None
