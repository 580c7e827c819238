"""Grid sizes for the grid-stride passes: full coverage, or capped at K blocks per SM.

A grid-stride loop is correct for any grid of at least one block; a grid of a few waves of
blocks per SM amortizes block launch and index arithmetic over several elements per thread
(NVIDIA developer blog, "CUDA Pro Tip: Write Flexible Kernels with Grid-Stride Loops", 2013).
"""

from __future__ import annotations

from typing import Optional

BLOCKS_PER_SM = (4, 8, 16, 32)
CHOICES: tuple[Optional[int], ...] = (8, None, 4, 16, 32)  # first: the default


def grid_expr(bound_spec: str, per_thread: int, blocks_per_sm: Optional[int]) -> str:
    """The spec grid expression: blocks needed for ``bound_spec`` elements at ``per_thread``
    elements per thread, capped at ``blocks_per_sm * sm_count`` when given."""
    per_block = "block.x" if per_thread == 1 else f"block.x * {per_thread}"
    full = f"ceil_div({bound_spec}, {per_block})"
    return full if blocks_per_sm is None else f"min({full}, sm_count * {blocks_per_sm})"


def grid_tag(blocks_per_sm: Optional[int]) -> str:
    return "grid=full" if blocks_per_sm is None else f"grid={blocks_per_sm}*SMs"


def grid_words(blocks_per_sm: Optional[int], per_thread: int) -> str:
    if blocks_per_sm is None:
        what = "one element" if per_thread == 1 else "one vector"
        return f"a full grid ({what} per thread, no loop trips)"
    return f"the grid capped at {blocks_per_sm} blocks per SM (threads loop over the rest)"


def validate(blocks_per_sm: Optional[int]) -> None:
    """Raises ValueError for a cap outside ``BLOCKS_PER_SM``."""
    if blocks_per_sm is not None and blocks_per_sm not in BLOCKS_PER_SM:
        raise ValueError(f"blocks_per_sm must be one of {BLOCKS_PER_SM} or None, "
                         f"found {blocks_per_sm!r}")
