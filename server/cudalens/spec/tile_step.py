"""Loops that step threads by a fixed tile instead of the block: the body fixes the block.

``for (int i = start + threadIdx.x; i < end; i += TILE)`` gives each thread every TILE-th
element from its own offset, so the elements are covered exactly when ``blockDim.x == TILE``:
with fewer threads some are never written, with more some are written twice. Spec inference
takes the block from such a loop (``block = TILE``), and the launch-configuration pass leaves
the block of such a kernel alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Optional

_LOOP = re.compile(
    r"\bfor\s*\(\s*(?:(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:int|long|size_t|int64_t|"
    r"unsigned)\s+)?(?P<var>[A-Za-z_]\w*)\s*=(?P<init>[^;]*)\bthreadIdx\.x\b[^;]*;[^;]*;\s*"
    r"(?P=var)\s*\+=\s*(?P<step>[A-Za-z_]\w*|\d+)\s*\)")


@dataclass(frozen=True)
class TileStep:
    """A loop of ``var`` from ``threadIdx.x`` stepping by ``step`` (a name or a literal) of
    value ``value``, at ``line`` (1-based, counted in the text given)."""

    var: str
    step: str
    value: int
    line: int


def tile_step(body: str, constants: Mapping[str, int], first_line: int = 1) -> Optional[TileStep]:
    """The first loop of ``body`` stepping a ``threadIdx.x``-based index by a constant other
    than ``blockDim.x`` (a literal or a name of ``constants``, at most 1024), or None.
    ``first_line`` is the line number of ``body``'s first line."""
    for m in _LOOP.finditer(body):
        step = m.group("step")
        value = int(step) if step.isdigit() else constants.get(step)
        if value is None or not 1 <= value <= 1024:
            continue
        line = first_line + body.count("\n", 0, m.start())
        return TileStep(m.group("var"), step, value, line)
    return None
