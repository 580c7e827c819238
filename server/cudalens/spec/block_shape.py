"""Literal block shapes written in a file: at launch sites and in ``__launch_bounds__``.

A launch's block argument counts as literal when it is an integer constant (``256``, a
``#define``d name, a ``const``/``constexpr`` integer), ``dim3(...)``/``{...}`` of such constants,
or the name of a ``dim3`` variable declared in the file with such constants. Lookups of names
are textual (regular expressions over the source), which suits a draft: a miss falls back to
the default block.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Optional

from cudalens.source.model import Kernel, LaunchSite

_INT = re.compile(r"^(0[xX][0-9a-fA-F]+|\d+)[uUlL]*$")
_DIM3_CALL = re.compile(r"^(?:dim3\s*)?[({](?P<args>[^(){}]*)[)}]$")


def const_int(text: str, source: str) -> Optional[int]:
    """The value of an integer constant expression written as a literal or a named constant."""
    t = text.strip()
    while t.startswith("(") and t.endswith(")"):
        t = t[1:-1].strip()
    m = _INT.match(t)
    if m:
        return int(m.group(1), 0)
    if not re.fullmatch(r"[A-Za-z_]\w*", t):
        return None
    name = re.escape(t)
    for pattern in (rf"#\s*define\s+{name}\s+\(?\s*(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\s*\)?\s*$",
                    rf"\b(?:constexpr|const)\b[^;=(){{}}]*\b{name}\s*(?:=\s*|\{{\s*)"
                    rf"(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\s*\}}?\s*;"):
        found = re.search(pattern, source, flags=re.MULTILINE)
        if found:
            return int(found.group(1), 0)
    return None


def literal_block(text: str, source: str) -> Optional[tuple[int, ...]]:
    """The block shape ``text`` (a launch's second ``<<<...>>>`` argument) denotes, or None."""
    t = text.strip()
    v = const_int(t, source)
    if v is not None:
        return (v,)
    m = _DIM3_CALL.match(t)
    if m:
        return _dims(m.group("args"), source)
    if re.fullmatch(r"[A-Za-z_]\w*", t):
        name = re.escape(t)
        decl = re.search(rf"\bdim3\s+{name}\s*(?:=\s*(?:dim3\s*)?)?[({{](?P<args>[^(){{}}]*)[)}}]",
                         source)
        if decl:
            return _dims(decl.group("args"), source)
    return None


def _dims(args: str, source: str) -> Optional[tuple[int, ...]]:
    parts = [a for a in args.split(",")]
    if not 1 <= len(parts) <= 3:
        return None
    values = [const_int(a, source) for a in parts]
    if any(v is None or v < 1 for v in values):
        return None
    dims = list(values)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return tuple(dims)  # type: ignore[arg-type]


def block_from_file(kernel: Kernel, sites: Sequence[LaunchSite],
                    source: str) -> Optional[tuple[tuple[int, ...], str]]:
    """(block shape, where it came from) from the first of ``kernel``'s launch sites with a
    literal block, else from ``__launch_bounds__``; None when neither gives one."""
    for site in sites:
        if len(site.config) >= 2:
            block = literal_block(site.config[1], source)
            if block is not None:
                return block, f"the launch at line {site.range.start.line + 1}"
    if kernel.launch_bounds:
        v = const_int(kernel.launch_bounds[0], source)
        if v is not None and v >= 1:
            return (v,), f"__launch_bounds__({kernel.launch_bounds[0]})"
    return None
