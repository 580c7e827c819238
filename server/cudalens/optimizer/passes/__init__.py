"""The built-in passes.

A pass is a module with ``name`` (str), ``check(ctx) -> str | None`` (None when it applies,
else the reason it does not, in a CUDA developer's words), ``parameter_space(ctx) ->
tuple[dict, ...]`` (keyword arguments for ``apply``, the default first) and
``apply(ctx, **params) -> PassResult`` (raises ``PassNotApplicable`` when ``check`` fails).
A pass keeps the kernel's parameter names, types and order (it may add qualifiers). A module
may set ``TUNING = True`` when the pass only tunes what the others built (the search then
does not use it for a structure's first, representative candidate).

``PASSES`` is in the order the search composes them (``cudalens.optimizer.staged_search.STAGES``):
qualifiers; one body rewrite (the structural rewrites and the grid-stride ones exclude each
other: after one, the others' patterns no longer match); loop unrolling; fast math; the block
size; last ``__launch_bounds__`` for the block chosen, which the batched search adds where
the compile report shows registers limiting occupancy.
"""

from __future__ import annotations

from types import ModuleType

from cudalens.optimizer.passes import (block_per_row, coarsen_reduce, column_reduce, fast_math,
                                       gridstride, hist_privatize, launch_bounds, launch_config,
                                       regblock_matmul, restrict_const, stencil2d_regs,
                                       stencil_regs,
                                       stencil_tile,
                                       tiled_matmul, tiled_transpose, unroll, vectorize_2d,
                                       vectorize_gridstride, warp_per_row, warp_reduce)

BODY_REWRITES: tuple[ModuleType, ...] = (tiled_transpose, regblock_matmul, tiled_matmul,
                                         warp_reduce, block_per_row, warp_per_row, stencil_tile,
                                         stencil_regs, stencil2d_regs,
                                         vectorize_2d, vectorize_gridstride, gridstride,
                                         hist_privatize, coarsen_reduce, column_reduce)

PASSES: tuple[ModuleType, ...] = (restrict_const, *BODY_REWRITES, unroll, fast_math,
                                  launch_config, launch_bounds)

BY_NAME: dict[str, ModuleType] = {p.name: p for p in PASSES}


def get(name: str) -> ModuleType:
    """The pass called ``name``. Raises KeyError listing the known passes."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no pass named {name!r} (known: {', '.join(BY_NAME)})") from None
