"""Pass ``vectorize_gridstride``: 16-byte vector loads/stores in a grid-stride loop.

An elementwise kernel (see ``cudalens.optimizer.elementwise``) is rewritten so that each
thread moves ``16 / sizeof(element)`` elements per load or store instruction (4 floats,
2 doubles). Fewer, wider memory instructions keep more bytes in flight per thread, and a warp's
request covers 512 contiguous bytes (CUDA C++ Best Practices Guide, "Coalesced Access to
Global Memory"; NVIDIA developer blog, "CUDA Pro Tip: Increase Performance with Vectorized
Memory Access", 2013). Pointers not aligned to the vector size take the scalar grid-stride
path, and the last ``n % width`` elements always do. Reads at a data-dependent index
(``src[idx[i]]``, of a buffer the kernel does not write) stay scalar per lane: ``idx`` and
``out`` move as vectors and each thread has ``width`` gathers in flight. Half-precision elements (``half``,
``__nv_bfloat16``) move as the toolkit's pairs, ``half2`` / ``__nv_bfloat162``, with paired
arithmetic where the body allows (``cudalens.optimizer.half_pairs``).

Parameters: ``blocks_per_sm`` (4, 8, 16, 32, or None for a grid that covers every vector).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from cudalens.optimizer import bound_locals, elementwise
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.gridstride_rewrite import (pair_name, paired_ops, pair_of,
                                                   rewrite_vector, vector_width)
from cudalens.optimizer.passes import grid_choice

name = "vectorize_gridstride"


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel is elementwise with 4- or 8-byte elements, or 2-byte floats of one
    type (``half``, ``__nv_bfloat16``: moved as pairs), else the reason."""
    ctx = bound_locals.fold(ctx)
    return elementwise.check(ctx, vector=True)


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """One application per grid choice, the default first."""
    return tuple({"blocks_per_sm": k} for k in grid_choice.CHOICES)


def apply(ctx: PassContext, blocks_per_sm: Optional[int] = 8) -> PassResult:
    """Rewrites the kernel body; the grid becomes ``min(ceil_div(n, block.x * W), sm_count *
    blocks_per_sm)`` (or the uncapped ``ceil_div``), the block is unchanged.

    Raises:
        PassNotApplicable: the kernel does not match (the message says why).
        ValueError: ``blocks_per_sm`` is not one of the choices.
    """
    ctx = bound_locals.fold(ctx)
    grid_choice.validate(blocks_per_sm)
    try:
        em = elementwise.match_vectorizable(ctx)
    except elementwise.NotElementwise as exc:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {exc}") from None
    width = vector_width(em)
    source = rewrite_vector(ctx, em)
    grid = grid_choice.grid_expr(em.bound_spec, width, blocks_per_sm)
    launch = dataclasses.replace(ctx.launch, grid=(grid,))
    types = sorted({o.spec_type for o in em.operands})
    pair = pair_of(em)
    if pair is not None:
        ops = paired_ops(ctx, em)
        math = (f"paired arithmetic ({', '.join(ops)}: one instruction for both elements)"
                if ops else "each element of the pair computed as written")
        guard = ("; the paired loop is compiled for sm_80 and newer (bfloat16 pair arithmetic), "
                 "older GPUs take the scalar loop" if pair.arch_guard else "")
        shown = "/".join(sorted({pair_name(o.c_type, pair) for o in em.operands}))
        explanation = (f"half-precision pairs ({shown}: 2 x {types[0]} per 4-byte load/store) "
                       f"and {math}, in a grid-stride loop with a scalar tail: 2x fewer memory"
                       f"{' and arithmetic' if ops else ''} instructions; "
                       f"{grid_choice.grid_words(blocks_per_sm, width)}{guard}")
    else:
        explanation = (f"16-byte vectorized loads/stores ({width} x {'/'.join(types)} per "
                       f"access) in a grid-stride loop with a scalar tail: {width}x fewer memory "
                       f"instructions, fully coalesced 512-byte warp requests; "
                       f"{grid_choice.grid_words(blocks_per_sm, width)}")
    if em.gathers:
        shown = ", ".join(f"{g}[...]" for g in em.gathers)
        explanation += (f"; the gathers ({shown}, at indices loaded per element) stay scalar "
                        f"loads, {width} independent ones in flight per thread")
    return PassResult(source=source, launch=launch,
                      tags=(f"vec{width}+gridstride", grid_choice.grid_tag(blocks_per_sm)),
                      explanation=explanation)
