"""Pass ``block_per_row``: a one-thread-per-row kernel becomes one thread block per row, for
long rows; and single-pass online softmax for the row's max and sum of exponentials.

The kernels are those ``warp_per_row`` recognizes (its module doc: a row index, a guard, loops
over the row's columns with sums and maxima, per-row stores). A warp per row leaves each
lane ``cols / 32`` elements; from about a thousand columns a block of ``B`` threads per row
gives each thread ``cols / B`` and keeps more loads in flight per row. Each loop's
accumulators are combined in two steps: across each warp with ``__shfl_xor_sync`` (every lane
gets the warp's value), then lane 0 of each warp writes it to a ``__shared__`` slot and after a
barrier every thread combines the block's warp slots in the same order, so every thread holds
the same row value (CUDA C++ Programming Guide, "Warp Shuffle Functions"; M. Harris,
"Optimizing Parallel Reduction in CUDA", NVIDIA, 2007). Per-row stores are done by thread 0.
The guard's ``return`` is the same for the whole block (one row per block), so every thread
reaches every barrier.

Online softmax (``online``): where a loop computing a maximum ``m = fmaxf(m, E)`` (or ``if (E >
m) m = E;``, ``m = (E > m) ? E : m;``: ``cudalens.optimizer.minmax``) is followed,
over the same columns, by a loop summing ``s += expf(E - m)``, the two become one loop keeping a
running maximum and a sum rescaled when the maximum grows (M. Milakov and N. Gimelshein,
"Online normalizer calculation for softmax", arXiv:1805.02867, 2018): ``if (v > m) { s = s *
expf(m - v) + 1; m = v; } else s += expf(v - m);``, and partial ``(m, s)`` pairs of two threads
merge as ``M = max(m1, m2), s = s1 * expf(m1 - M) + s2 * expf(m2 - M)``. The maximum is exact;
the sum is the same sum rounded differently (within the tolerance the runner checks). The row
is read twice instead of three times. The same fusion is offered by ``warp_per_row``
(``online``), whose combine is the warp step alone: both passes' row rewrite, the fusion
included, is ``cudalens.optimizer.row_group.rewrite``.

Chosen by row length: the pass applies when the loops' bound, at the spec's sizes, is at
least ``MIN_COLUMNS`` (or cannot be evaluated); ``warp_per_row`` is offered for every length.

Parameters: ``block`` (256, 512, 128, 1024), ``online`` (where the loops allow it, first),
``gridstride``: the blocks loop over the rows (``row += gridDim.x``), so the kernel is also
correct under any launch whose block is a multiple of 32 threads, the user's included (a
drop-in, ``cudalens.dropin``), offered unless the body returns after the guard.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.passes import warp_per_row as wpr
from cudalens.optimizer.row_group import Match, gridstride_blocker, online_pair, rewrite
from cudalens.kernel_model.file_facts import file_identifiers
from cudalens.kernel_model.loops import for_header, less_than_bound
from cudalens.kernel_model.syntax import identifiers
from cudalens.spec import expr as spec_expr

name = "block_per_row"

BLOCKS = (256, 512, 128, 1024)
MIN_COLUMNS = 1024


def row_length(ctx: PassContext, m: Match) -> Optional[int]:
    """The first loop's bound at the spec's sizes, None when it cannot be evaluated."""
    from cudalens.optimizer.index2d import NoMatch, spec_text
    from cudalens.optimizer.macros import file_macros

    head = for_header(m.loops[0].node, m.parsed)
    bound = less_than_bound(head, m.parsed) if head is not None else None
    if bound is None:
        return None
    try:
        text = spec_text(bound, m.parsed, ctx, file_macros(m.parsed))
        env: dict = {}
        for s in ctx.spec.sizes:
            env[s.name] = spec_expr.evaluate(s.expr, env)
        return int(spec_expr.evaluate(text, env))
    except (NoMatch, spec_expr.ExprError, TypeError, ValueError, ZeroDivisionError):
        return None


def csr_row_length(ctx: PassContext, m: Match) -> Optional[tuple[str, float]]:
    """(row pointers, mean entries per row at the spec's sizes) when the first loop starts or
    ends at a read of a buffer the spec fills ``csr(nnz)`` (directly or through a local loaded
    from it), else None."""
    from cudalens.spec.model import BufferDecl

    head = for_header(m.loops[0].node, m.parsed)
    if head is None:
        return None
    p = m.parsed
    words = identifiers(head.start, p) | identifiers(head.cond, p)
    loaded = set(words)
    for stmt in m.work:  # locals loaded from the row pointers: const int first = rp[r];
        if stmt.type == "declaration":
            for d in stmt.children_by_field_name("declarator"):
                name = d.child_by_field_name("declarator")
                value = d.child_by_field_name("value")
                if value is not None and name is not None and p.text_of(name) in words:
                    loaded |= identifiers(value, p)
    for decl in ctx.spec.params:
        if isinstance(decl, BufferDecl) and decl.fill == "csr" and decl.name in loaded and \
                decl.fill_args:
            try:
                env: dict = {}
                for s in ctx.spec.sizes:
                    env[s.name] = spec_expr.evaluate(s.expr, env)
                nnz = spec_expr.evaluate(decl.fill_args[0], env)
                rows = spec_expr.evaluate(decl.length, env) - 1
                return decl.name, nnz / max(rows, 1)
            except (spec_expr.ExprError, TypeError, ValueError, ZeroDivisionError):
                return None
    return None


def _plan(ctx: PassContext) -> tuple[Optional[str], Optional[Match]]:
    reason, m = wpr._plan(ctx)
    if reason is not None:
        return reason, None
    csr = csr_row_length(ctx, m)
    if csr is not None and csr[1] < MIN_COLUMNS:
        return (f"rows of {csr[1]:.0f} entries on average ({csr[0]}'s csr fill at the spec's "
                f"sizes) are short: a warp per {m.index} keeps its lanes busy, a block per "
                f"{m.index} pays from {MIN_COLUMNS} entries"), None
    n = row_length(ctx, m)
    if n is not None and n < MIN_COLUMNS:
        return (f"rows of {n} columns (at the spec's sizes) are short: a warp per {m.index} "
                f"keeps its lanes busy, a block per {m.index} pays from {MIN_COLUMNS} "
                f"columns"), None
    return None, m


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel gives each thread a long row the pass can spread over a block (or
    a block a row, read as one thread per row: ``warp_per_row.block_rows_reason`` first)."""
    why = wpr.block_rows_reason(ctx)
    if why is not None:
        return why
    ctx, why = wpr.normalize_with_reason(ctx)
    return why if why is not None else _plan(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """Per block size: online first where the loops allow it, then without; then the same in
    the grid-stride form where the body does not return after the guard."""
    ctx = wpr.normalize(ctx)
    reason, m = _plan(ctx)
    if reason is not None:
        return tuple({"block": b} for b in BLOCKS)
    onl = (True, False) if online_pair(m) is not None else (False,)
    plain = tuple({"block": b, "online": o} for o in onl for b in BLOCKS)
    if gridstride_blocker(m) is not None:
        return plain
    return plain + tuple({**d, "gridstride": True} for d in plain)


def apply(ctx: PassContext, block: int = 256, online: bool = False,
          gridstride: bool = False) -> PassResult:
    """The block-per-row kernel with ``block`` threads (module doc for ``online`` and
    ``gridstride``).

    Raises:
        PassNotApplicable: the precondition fails, or ``online``/``gridstride`` where the
            kernel does not allow it (the message says why).
        ValueError: ``block`` is not one of ``BLOCKS``.
    """
    from_blocks = wpr._block_rows(ctx) is not ctx  # already a block per row
    ctx = wpr.normalize(ctx)
    if block not in BLOCKS:
        raise ValueError(f"block must be one of {BLOCKS}, found {block!r}")
    reason, m = _plan(ctx)
    if reason is not None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    p = m.parsed
    taken = set(file_identifiers(p)) | {ctx.kernel.name}
    source, o = rewrite(ctx, m, "block", online, gridstride, taken, name)
    launch = dataclasses.replace(ctx.launch, block=(str(block),), grid=(m.bound_spec,))
    accs = [a for l in m.loops for a, _ in l.accumulators]
    explanation = (f"one block of {block} threads per {m.index} instead of one thread: "
                   f"consecutive threads read consecutive elements of the {m.index} (coalesced), "
                   f"each thread 1/{block} of the columns")
    if from_blocks:
        explanation = (f"one block of {block} threads per {m.index}, as before, each thread "
                       f"1/{block} of the columns")
    if accs:
        explanation += (f"; {', '.join(dict.fromkeys(accs))} combined across each warp with "
                        f"__shfl_xor_sync, then across the block's warps through shared memory")
        if from_blocks:
            explanation += (" (two barriers per result instead of a tree in shared memory "
                            "with a barrier per step)")
    if o is not None:
        explanation += (f"; {o.m} and {o.s} in one pass over the {m.index} (online softmax: "
                        f"the sum is rescaled when the running maximum grows; Milakov & "
                        f"Gimelshein 2018), so the {m.index} is read twice instead of three "
                        f"times")
    if m.row_stores:
        explanation += f"; thread 0 stores the per-{m.index} result"
    explanation += (" (sums are added in a different order: results may differ in the last "
                    "bits, within the tolerance the runner checks)") + wpr.conditional_note(m)
    if gridstride:
        explanation += (f"; the blocks loop over the {m.index}s (grid-stride), so the kernel is "
                        f"also correct under any launch whose block is a multiple of 32 "
                        f"threads, the original one included")
    tag = "block-per-row" + ("+online" if o else "") + ("+gridstride" if gridstride else "")
    return PassResult(source=source, launch=launch, tags=(tag, f"block={block}"),
                      explanation=explanation)
