"""Pass ``hist_privatize``: a global-atomics histogram counted in shared memory first.

The pattern: one thread per element, each adding to a histogram in global memory::

    int i = blockIdx.x * blockDim.x + threadIdx.x;     // any integer type
    if (i < n) { ... atomicAdd(&bins[BIN], V); }       // or: if (i >= n) return; ...

where ``bins`` is a pointer parameter reached only through ``atomicAdd(&bins[k], v)`` (or
``bins + k``), the other pointers are only read, and nothing else ties threads together
(``cudalens.optimizer.hist_match``). Every element's update goes to one of a few hundred
counters in global memory, so the whole grid's atomics serialize on them in L2.

The rewrite privatizes the histogram (CUDA C++ Best Practices Guide, "Shared Memory";
N. Wilt, "The CUDA Handbook", ch. 12 "Reduction" and the histogram examples of the CUDA
samples, ``histogram64``/``histogram256``): each block zeroes a copy of the bins in shared
memory, a grid-stride loop over the input (grid capped at a few blocks per SM) runs the
original statements with ``bins`` replaced by the shared copy (shared-memory atomics:
contention only within the block), and after a barrier each block adds its non-zero counts
to ``bins`` with one global ``atomicAdd`` per bin. Integer counts are the same in any order;
float weights are summed in another order (within the runner's tolerance).

The shared copy has as many bins as the spec's ``bins`` buffer has elements (the larger of
the nominal and ragged runs): every index the original may use is below that, and a block
only writes the bins it counted into, so the bins the original never touches stay untouched.

Parameters: ``per_warp`` (False: one copy per block; True: one copy per warp, so lanes of
different warps never contend; offered when the copies fit in 48 KB of static shared memory)
and ``blocks_per_sm`` (8, 4, 16, 32).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from cudalens.optimizer import bound_locals, hist_match, structural
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.index_width import int_fits
from cudalens.optimizer.passes import grid_choice
from cudalens.optimizer.reasons import reason_of

name = "hist_privatize"

WARP = 32
MAX_STATIC_SHARED = 48 * 1024  # bytes of static __shared__ per block (CUDA Programming Guide)


def _match(ctx: PassContext) -> tuple[Optional[str], Optional[hist_match.Histogram]]:
    try:
        return None, hist_match.match(ctx)
    except hist_match.NotHistogram as exc:
        return reason_of(exc), None


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel is a global-atomics histogram whose bins fit in shared memory,
    else the reason."""
    ctx = bound_locals.fold(ctx)
    return _match(ctx)[0]


def _warps(m: hist_match.Histogram) -> int:
    return m.block // WARP


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """Per block at 8, 4, 16 and 32 blocks per SM, then per warp where the copies fit."""
    ctx = bound_locals.fold(ctx)
    reason, m = _match(ctx)
    if m is None:
        return ({"per_warp": False, "blocks_per_sm": 8},)
    space = [{"per_warp": False, "blocks_per_sm": k} for k in (8, 4, 16, 32)]
    if m.block % WARP == 0 and _warps(m) * m.bins * m.element_bytes <= MAX_STATIC_SHARED:
        space += [{"per_warp": True, "blocks_per_sm": k} for k in (8, 16)]
    return tuple(space)


def apply(ctx: PassContext, per_warp: bool = False, blocks_per_sm: int = 8) -> PassResult:
    """The privatized histogram; the grid becomes ``min(ceil_div(n, block.x), sm_count *
    blocks_per_sm)``, the block is the spec's.

    Raises:
        PassNotApplicable: the kernel does not match, or ``per_warp`` copies do not fit in
            shared memory (the message says why).
        ValueError: ``blocks_per_sm`` is not one of 4, 8, 16, 32.
    """
    ctx = bound_locals.fold(ctx)
    grid_choice.validate(blocks_per_sm)
    if blocks_per_sm is None:
        raise ValueError("hist_privatize needs a grid cap (4, 8, 16 or 32 blocks per SM)")
    reason, m = _match(ctx)
    if m is None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    warps = _warps(m)
    if per_warp and (m.block % WARP or warps * m.bins * m.element_bytes > MAX_STATIC_SHARED):
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {warps} per-warp copies of "
                                f"{m.bins} bins do not fit in {MAX_STATIC_SHARED} bytes")
    p = m.parsed
    w = structural.Layout(ctx)
    nb = m.bins
    shared = w.fresh(f"s_{m.hist}")
    mine = w.fresh(f"warp_{m.hist}") if per_warp else shared
    b, wv, total = w.fresh("b"), w.fresh("w"), w.fresh("sum")
    etype = m.element_type
    index_type = m.index_type if m.index_type != "int" or int_fits(ctx, m.bound_spec) \
        else "long long"
    if per_warp:
        w(1, f"// Count into one shared-memory copy of the {nb} bins per warp, then add the "
             f"block's counts to {m.hist} once.")
        w(1, f"__shared__ {etype} {shared}[{warps}][{nb}];")
        w(1, f"{etype}* {mine} = {shared}[threadIdx.x / {WARP}];")
        w(1, f"for (int {b} = threadIdx.x; {b} < {warps * nb}; {b} += blockDim.x) "
             f"{shared}[{b} / {nb}][{b} % {nb}] = 0;")
    else:
        w(1, f"// Count into a shared-memory copy of the {nb} bins, then add the block's "
             f"counts to {m.hist} once.")
        w(1, f"__shared__ {etype} {shared}[{nb}];")
        w(1, f"for (int {b} = threadIdx.x; {b} < {nb}; {b} += blockDim.x) {shared}[{b}] = 0;")
    w(1, "__syncthreads();")
    w(1, f"for ({index_type} {m.index} = {m.index_init}; {m.index} < {m.bound}; "
         f"{m.index} += gridDim.x * blockDim.x) {{")
    for stmt in m.guarded:
        uses = [u for u in m.hist_uses if stmt.start_byte <= u.start_byte < stmt.end_byte]
        w.text_block(2, structural.text_with(p, stmt, [(u, mine) for u in uses]))
    w(1, "}")
    w(1, "__syncthreads();")
    if per_warp:
        w(1, f"for (int {b} = threadIdx.x; {b} < {nb}; {b} += blockDim.x) {{")
        w(2, f"{etype} {total} = 0;")
        w(2, f"for (int {wv} = 0; {wv} < {warps}; ++{wv}) {total} += {shared}[{wv}][{b}];")
        w(2, f"if ({total} != 0) atomicAdd(&{m.hist}[{b}], {total});")
        w(1, "}")
    else:
        w(1, f"for (int {b} = threadIdx.x; {b} < {nb}; {b} += blockDim.x)")
        w(2, f"if ({shared}[{b}] != 0) atomicAdd(&{m.hist}[{b}], {shared}[{b}]);")
    source = w.source()
    grid = grid_choice.grid_expr(m.bound_spec, 1, blocks_per_sm)
    launch = dataclasses.replace(ctx.launch, grid=(grid,))
    copies = (f"one copy per warp ({warps} copies of {nb} bins, {warps * nb * m.element_bytes} "
              f"bytes), so only lanes of one warp contend" if per_warp else
              f"one copy per block ({nb * m.element_bytes} bytes)")
    order = (" (float weights are added in another order: within the tolerance the runner "
             "checks)" if m.float_counts else "")
    explanation = (f"shared-memory histogram privatization: each block counts its share of "
                   f"the input into a private copy of the {nb} bins in shared memory, "
                   f"{copies}, then adds its non-zero bins to {m.hist} with one global "
                   f"atomicAdd each, instead of one contended global atomic per element"
                   f"{order}; {grid_choice.grid_words(blocks_per_sm, 1)}")
    tag = "hist-privatize-warp" if per_warp else "hist-privatize"
    return PassResult(source=source, launch=launch, tags=(tag, grid_choice.grid_tag(blocks_per_sm)),
                      explanation=explanation)
