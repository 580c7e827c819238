"""Rewriting a source text: byte edits applied together, fresh names, a line's indentation.

Offsets are byte offsets into the UTF-8 encoded text, as tree-sitter reports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable
from cudalens.textfile import from_bytes, to_bytes


@dataclass(frozen=True)
class Edit:
    """Replace bytes ``start:end`` of the source with ``text``."""

    start: int
    end: int
    text: str


def apply_edits(data: bytes, edits: Iterable[Edit]) -> str:
    """``data`` with non-overlapping ``edits`` applied, decoded as UTF-8.

    Raises:
        ValueError: two edits overlap.
    """
    out: list[bytes] = []
    pos = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        if e.start < pos:
            raise ValueError(f"overlapping edits at byte {e.start} (previous edit ends at {pos})")
        out.append(data[pos:e.start])
        out.append(to_bytes(e.text))
        pos = e.end
    out.append(data[pos:])
    return from_bytes(b"".join(out))


def fresh_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base`` with a numeric suffix, that is not in ``taken``; adds it to
    ``taken``."""
    name, n = base, 1
    while name in taken:
        name = f"{base}{n}"
        n += 1
    taken.add(name)
    return name


def line_indent(data: bytes, byte: int) -> str:
    """The leading whitespace of the line holding ``byte``."""
    start = data.rfind(b"\n", 0, byte) + 1
    end = start
    while end < len(data) and data[end:end + 1] in (b" ", b"\t"):
        end += 1
    return from_bytes(data[start:end])
