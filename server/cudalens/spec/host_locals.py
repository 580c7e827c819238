"""Integer locals of the host function that launches a kernel, read from the file's text:
``int grid_size = N;`` or ``unsigned int block_size = 512;`` above ``<<<grid_size,
block_size>>>`` stand for their initializers in the launch's grid and block expressions.
Shared by spec inference (``spec.infer``) and the block-shape reader (``spec.block_shape``)."""

from __future__ import annotations

import functools
import re


def offset_of(text: str, line: int, column: int) -> int:
    """The character offset of 0-based ``line`` and ``column`` in ``text`` (near enough for
    ordering declarations before a launch)."""
    starts = line_starts(text)
    return len(text) if line >= len(starts) else starts[line] + column


@functools.lru_cache(maxsize=8)
def line_starts(text: str) -> tuple[int, ...]:
    return (0,) + tuple(m.end() for m in re.finditer("\n", text))


LOCAL_INT = (r"(?:(?:static|const|constexpr)\s+)*(?:unsigned\s+|signed\s+)?(?:long\s+)?"
             r"(?:int|long|short|size_t|auto|unsigned|uint)\s+(?:const\s+)?")


_DECLARATION = re.compile(rf"\b{LOCAL_INT}([^;{{}}]+);")


def declarations(text: str) -> list[tuple[str, str, int]]:
    """``(name, initializer, end offset of its declaration)`` of each declarator with an
    initializer of the integer declarations in ``text``, in order; every declarator of a
    declaration counts (``int nx = 1 << 10, ny = 1 << 13;`` gives nx and ny), commas inside
    parentheses or brackets are not separators (``int a = min(x, y), b = 2;``)."""
    out = []
    for m in _DECLARATION.finditer(text):
        for part in _split_commas(m.group(1)):
            d = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*=\s*(.+?)\s*", part, flags=re.S)
            if d is not None:
                out.append((d.group(1), d.group(2), m.end()))
    return out


def _split_commas(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses, brackets and braces."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def locals_in(expr: str, source: str, before: int, keep: set[str]) -> str:
    """``expr`` with each name that is not in ``keep`` replaced by the initializer of its last
    integer declaration before offset ``before`` in the launching function (``int grid_size =
    N;``; the function taken to start after the last ``}`` that opens a line above the
    launch; a few rounds), when that name is not assigned again between them."""
    start = source.rfind("\n}", 0, before) + 1
    for _ in range(3):
        changed = False

        def one(m: "re.Match") -> str:
            nonlocal changed
            name = m.group(0)
            if name in keep:
                return name
            found = [(init, end) for declared, init, end in declarations(source[start:before])
                     if declared == name]
            if not found:
                return name
            init, end = found[-1]
            later = source[start + end:before]
            if re.search(rf"(?<![\w.]){re.escape(name)}\s*(?:[-+*/%]?=)(?!=)", later):
                return name
            changed = True
            return f"({init})"
        expr = re.sub(r"(?<![\w.])[A-Za-z_]\w*(?!\s*\()", one, expr)
        if not changed:
            break
    return expr
