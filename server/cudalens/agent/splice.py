"""Putting candidate code in place of the kernel, and mapping file lines back to it.

The candidate replaces the kernel's definition (``Kernel.start_byte`` to ``end_byte``: its
template header, ``extern "C"`` and attributes included). Its ``#include`` lines move to the
file's include block (after the last ``#include`` before the kernel, else to the top), so a
kernel inside a namespace does not include headers there; includes the file already has are
dropped. Compiler messages name lines of the whole file; ``Spliced.code_line`` turns them into
lines of the candidate's code as the model wrote it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from cudalens.agent.guard import includes_of
from cudalens.source.model import Kernel
from cudalens.textfile import from_bytes, to_bytes

_INCLUDE_LINE = re.compile(r"^[ \t]*#[ \t]*include\b")


@dataclass(frozen=True)
class Spliced:
    """The whole file with the candidate in place.

    ``line_map[i]`` is the 1-based line of the candidate's code that file line ``i + 1`` holds,
    or None for lines of the original file.
    """

    text: str
    line_map: tuple[Optional[int], ...]

    def code_line(self, file_line: int) -> Optional[int]:
        """The candidate's line shown as ``file_line`` (1-based), None when outside it."""
        if 1 <= file_line <= len(self.line_map):
            return self.line_map[file_line - 1]
        return None


def splice(original: str, kernel: Kernel, code: str) -> Spliced:
    """``original`` with ``kernel``'s definition replaced by ``code`` (see the module doc)."""
    data = to_bytes(original)
    before = from_bytes(data[:kernel.start_byte])
    after = from_bytes(data[kernel.end_byte:])
    present = set(includes_of(original))

    kept: list[tuple[str, Optional[int]]] = []  # (line text, its code line)
    hoisted: list[str] = []
    code_lines = code.rstrip("\n").split("\n")
    for number, line in enumerate(code_lines, 1):
        if _INCLUDE_LINE.match(line):
            target = includes_of(line)
            if target and target[0] not in present and line.strip() not in hoisted:
                hoisted.append(line.strip())
            continue
        kept.append((line, number))

    before_lines = before.split("\n")  # the last element is the start of the kernel's line
    insert_at = 0
    for i, line in enumerate(before_lines[:-1]):
        if _INCLUDE_LINE.match(line):
            insert_at = i + 1
    head = before_lines[:insert_at] + hoisted + before_lines[insert_at:]
    body = [text for text, _ in kept]
    tail = after.split("\n")

    lines = head[:-1] + [head[-1] + (body[0] if body else "")] + body[1:]
    lines[-1] += tail[0]
    lines += tail[1:]
    line_map: list[Optional[int]] = [None] * (len(head) - 1)
    line_map += [number for _, number in kept] or [None]
    line_map += [None] * (len(tail) - 1)
    return Spliced(text="\n".join(lines), line_map=tuple(line_map))
