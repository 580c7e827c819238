"""Whether a rewrite may keep 32-bit ``int`` indices: a proof from the spec's sizes.

A grid-stride loop ``for (int i = first; i < n; i += stride)`` computes ``i + stride`` once
past the last element, so the largest value it forms is below ``n + stride``. Signed
overflow is undefined behaviour in C++, so ``int`` is only kept when that value fits.

The stride is bounded by the widest grid the rewrites or the original launch use: one
element per thread, ``ceil_div(n, block.x)`` blocks, so ``stride <= ceil_div(n, block.x) *
block.x < n + block.x``. The sizes are the spec's nominal ones (the ragged verification run
uses smaller ones), so the proof holds for the problem the spec describes; a program that
launches the kernel on more elements than the spec says needs the 64-bit form.
"""

from __future__ import annotations

from typing import Optional

from cudalens.optimizer.context import PassContext
from cudalens.spec import expr as spec_expr

INT32_MAX = 2 ** 31 - 1


def spec_sizes(ctx: PassContext) -> Optional[dict[str, int]]:
    """The spec's nominal sizes, each evaluated with the ones before it, or None when one
    does not evaluate to an integer."""
    env: dict[str, object] = {}
    try:
        for s in ctx.spec.sizes:
            value = spec_expr.evaluate(s.expr, env)
            if not isinstance(value, int):
                return None
            env[s.name] = value
    except spec_expr.ExprError:
        return None
    return env  # type: ignore[return-value]


def largest_index(ctx: PassContext, bound_spec: str) -> Optional[int]:
    """An upper bound on every index a grid-stride loop over ``bound_spec`` elements forms
    (``n - 1 + stride`` with ``stride <= ceil_div(n, block.x) * block.x``, module docstring),
    from the spec's sizes and block; None when the spec's expressions do not evaluate."""
    sizes = spec_sizes(ctx)
    if sizes is None:
        return None
    try:
        n = spec_expr.evaluate(bound_spec, sizes)
        block = spec_expr.evaluate(ctx.launch.block[0], sizes)
    except spec_expr.ExprError:
        return None
    if not isinstance(n, int) or not isinstance(block, int) or block <= 0 or n < 0:
        return None
    stride = -(-n // block) * block
    return n - 1 + stride


def int_fits(ctx: PassContext, bound_spec: str) -> bool:
    """True when ``int`` indices of a grid-stride loop over ``bound_spec`` elements cannot
    overflow for the spec's sizes (``largest_index <= INT32_MAX``)."""
    top = largest_index(ctx, bound_spec)
    return top is not None and top <= INT32_MAX
