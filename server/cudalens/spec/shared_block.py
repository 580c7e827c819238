"""The block a kernel's fixed-size ``__shared__`` arrays imply, for a draft with no launch site.

``__shared__ int buf[TILE][TILE]; ... buf[r][threadIdx.x]`` is written by every thread of a
block at its own column, so the block has (at most, and in practice exactly) ``TILE`` threads
along x: with the default 256 threads a 16-wide tile is overrun (Rodinia's needle, srad; the
new-user report's R5). Each subscript of a shared array of constant extent ``E`` that is a
thread index along one axis plus a constant ``c`` (``threadIdx.x``, ``tx + 1`` with ``int tx
= threadIdx.x;``) bounds that axis's block size by ``E - c``; the block is the smallest bound
on each axis, of the subscripts with ``c = 0`` where the axis has one (``tile[ty][tx + 1]`` is
often behind ``if (tx < TILE - 1)``, which this reading does not see). An extent padded
against bank conflicts (``[TILE + 1]``, ``[33]``: one more than a power of two) read at ``c =
0`` counts as the power of two. Text-level, like ``tile_step``:
the body's text with the file's integer constants.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

_DECL = re.compile(r"(?<![\w])__shared__\s+(?:volatile\s+)?(?:const\s+)?"
                   r"[A-Za-z_][\w:]*(?:\s*<[^<>;]*>)?\s+(?P<decls>[^;{}()=]+);")
_DECLARATOR = re.compile(r"(?:^|,)\s*(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\[\]]+\]\s*)+)")
_ALIAS = re.compile(r"(?:\b(?:const\s+)?(?:unsigned\s+)?(?:int|long|unsigned|size_t|short)\s+|,\s*)"
                    r"(?P<name>[A-Za-z_]\w*)\s*=\s*(?:\(\s*int\s*\)\s*)?threadIdx\.(?P<axis>[xyz])"
                    r"(?=\s*[,;])")
_MAX_THREADS = 1024


@dataclass(frozen=True)
class SharedBlock:
    """The block (one value per axis, x first) and the subscript that gave each axis's
    value: ``why[i]`` is ``"buf[r][threadIdx.x]"``-like text with the array's extent."""

    block: tuple[int, ...]
    why: tuple[str, ...]

    def reason(self) -> str:
        """Where the block came from, for the draft's ``block X: ...`` note."""
        return (f"from the fixed-size shared arrays ({'; '.join(self.why)}); no launch site "
                f"gives the block")


def _subscripts(text: str, at: int) -> list[str]:
    """The ``[...]`` subscripts written right after offset ``at`` (nested brackets kept)."""
    out, i, n = [], at, len(text)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n or text[i] != "[":
            return out
        depth, j = 0, i
        while j < n:
            depth += {"[": 1, "]": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        if j >= n:
            return out
        out.append(text[i + 1:j].strip())
        i = j + 1


def _thread_term(sub: str, axes: dict[str, str], value: Callable[[str], Optional[int]]
                 ) -> Optional[tuple[str, int]]:
    """(axis, c) for a subscript ``T``, ``T + c`` or ``c + T`` with T a thread index along
    axis (``threadIdx.x`` or a local alias of it) and c a constant >= 0; else None."""
    s = sub.strip()
    while s.startswith("(") and s.endswith(")"):
        s = s[1:-1].strip()
    parts = [p.strip() for p in s.split("+")]
    if len(parts) > 2 or any(not p for p in parts):
        return None
    found = [(i, m.group(1) if m else axes[p]) for i, p in enumerate(parts)
             for m in [re.fullmatch(r"threadIdx\.([xyz])", p)] if m or p in axes]
    if len(found) != 1:
        return None
    index, axis = found[0]
    if len(parts) == 1:
        return axis, 0
    c = value(parts[1 - index])
    return (axis, c) if c is not None and c >= 0 else None


def shared_block(body: str, value: Callable[[str], Optional[int]],
                 uses_y: bool = False) -> Optional[SharedBlock]:
    """The block ``body`` (a kernel's text) implies through its fixed-size ``__shared__``
    arrays (see the module doc), or None when no subscript gives the x axis, or the block
    would exceed 1024 threads. ``value`` evaluates an extent or constant text to an int (None
    when unknown: the file's macros and constants); ``uses_y``: the body reads threadIdx.y,
    so a y extent must be found too (else None)."""
    arrays: dict[str, tuple[list[int], list[str]]] = {}
    for decl in _DECL.finditer(body):
        for d in _DECLARATOR.finditer(decl.group("decls")):
            texts = re.findall(r"\[([^\[\]]+)\]", d.group("dims"))
            extents = [value(t) for t in texts]
            if all(e is not None and e > 0 for e in extents):
                arrays[d.group("name")] = ([int(e) for e in extents], texts)  # type: ignore
    if not arrays:
        return None
    axes = {m.group("name"): m.group("axis") for m in _ALIAS.finditer(body)}
    best: dict[tuple[str, bool], tuple[int, bool, str]] = {}  # (axis, c > 0): (bound, padded, why)
    for name, (extents, texts) in arrays.items():
        for m in re.finditer(rf"(?<![\w.]){re.escape(name)}\s*\[", body):
            subs = _subscripts(body, m.end() - 1)
            if len(subs) != len(extents):
                continue
            for k, sub in enumerate(subs):
                term = _thread_term(sub, axes, value)
                if term is None:
                    continue
                axis, c = term
                bound = extents[k] - c
                padded = c == 0 and bound >= 9 and (bound - 1) & (bound - 2) == 0
                if padded:
                    bound -= 1
                if bound < 1:
                    continue
                shown = f"{name}" + "".join(f"[{s}]" for s in subs)
                why = (f"{shown} with {name}'s extent {texts[k].strip()} = {extents[k]}"
                       + (" (padded)" if padded else "") + f" along threadIdx.{axis}")
                key = (axis, c > 0)
                if key not in best or (bound, padded) < best[key][:2]:
                    best[key] = (bound, padded, why)
    per_axis = {axis: (best.get((axis, False)) or best[(axis, True)])[::2]
                for axis, _ in best}
    if "x" not in per_axis or (uses_y and "y" not in per_axis) or "z" in per_axis:
        return None
    dims = [per_axis["x"]] + ([per_axis["y"]] if "y" in per_axis else [])
    block = tuple(b for b, _ in dims)
    total = 1
    for b in block:
        total *= b
    if total > _MAX_THREADS:
        return None
    return SharedBlock(block, tuple(w for _, w in dims))
