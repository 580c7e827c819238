"""Pass ``gridstride``: the elementwise kernel as a scalar grid-stride loop.

Same pattern as ``vectorize_gridstride`` (see ``cudalens.optimizer.elementwise``) without the
vectors: with a grid capped at a few blocks per SM each thread handles several elements,
amortizing block scheduling and index arithmetic (NVIDIA developer blog, "CUDA Pro Tip:
Write Flexible Kernels with Grid-Stride Loops", 2013).

Parameters: ``blocks_per_sm`` (4, 8, 16, 32; None, the full grid, would change nothing).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from cudalens.optimizer import bound_locals, elementwise
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.gridstride_rewrite import rewrite_scalar
from cudalens.optimizer.passes import grid_choice

name = "gridstride"


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel is elementwise, else the reason."""
    ctx = bound_locals.fold(ctx)
    return elementwise.check(ctx, vector=False)


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """One application per grid cap, the default (8 blocks per SM) first."""
    return tuple({"blocks_per_sm": k} for k in grid_choice.CHOICES if k is not None)


def apply(ctx: PassContext, blocks_per_sm: int = 8) -> PassResult:
    """Rewrites the kernel body; grid ``min(ceil_div(n, block.x), sm_count * blocks_per_sm)``.

    Raises:
        PassNotApplicable: the kernel does not match (the message says why).
        ValueError: ``blocks_per_sm`` is not one of 4, 8, 16, 32.
    """
    ctx = bound_locals.fold(ctx)
    if blocks_per_sm is None:
        raise ValueError("gridstride needs a grid cap (4, 8, 16 or 32 blocks per SM); the full "
                         "grid is the original kernel")
    grid_choice.validate(blocks_per_sm)
    try:
        em = elementwise.match(ctx)
    except elementwise.NotElementwise as exc:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {exc}") from None
    source = rewrite_scalar(ctx, em)
    launch = dataclasses.replace(ctx.launch,
                                 grid=(grid_choice.grid_expr(em.bound_spec, 1, blocks_per_sm),))
    explanation = (f"grid-stride loop with {grid_choice.grid_words(blocks_per_sm, 1)}: each "
                   f"thread handles several elements, amortizing block scheduling and index "
                   f"arithmetic")
    return PassResult(source=source, launch=launch,
                      tags=("gridstride", grid_choice.grid_tag(blocks_per_sm)),
                      explanation=explanation)
