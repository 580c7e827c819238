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

Vector form (``vector`` > 1): where the per-element statements read one input at the
element's index, ``values[i]`` with ``i`` the global thread index and the read reached for
every ``i < n`` (``cudalens.optimizer.span_read``), the grid-stride loop loads
``vector = 16 / sizeof(element)`` elements per iteration with one ``int4`` (128-bit) load
into a register array and runs the original statements once per element, the read replaced
by that element (4 independent shared atomics per load for 4-byte values, 16 for bytes).
The vector loop covers the first ``n / vector * vector`` elements; the ragged tail runs the
scalar statements. The load needs the pointer 16-byte aligned, which an offset into an
allocation need not be, so the address is tested at run time and a misaligned buffer takes
the scalar loop (the test is the same for every thread: no barrier is split).

Parameters: ``vector`` (1: scalar loads; 16 / element bytes where the vector form applies),
``per_warp`` (False: one copy per block; True: one copy per warp, so lanes of different warps
never contend; offered when the copies fit in 48 KB of static shared memory) and
``blocks_per_sm`` (8, 4, 16, 32).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from cudalens.kernel_model.syntax import walk
from cudalens.optimizer import bound_locals, hist_match, structural
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.index_width import int_fits
from cudalens.optimizer.passes import grid_choice
from cudalens.optimizer.structural import element_bytes
from cudalens.optimizer.reasons import reason_of

name = "hist_privatize"

WARP = 32
VECTOR_BYTES = 16  # one int4: ld.global.v4.u32 (CUDA C++ Programming Guide, "Built-in Vector Types")
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


@dataclass(frozen=True)
class _VectorPlan:
    """``span``: the matched read; ``ctype``: its element C type; ``width``: elements per
    16-byte load."""

    span: object
    ctype: str
    width: int


def _vector_plan(ctx: PassContext, m: hist_match.Histogram) -> tuple[Optional[str],
                                                                     Optional[_VectorPlan]]:
    """(None, the plan) when the per-element statements read one input contiguously in the
    element index (module doc), else (the reason, None)."""
    from cudalens.optimizer import span_read

    if m.index_decl is None:
        return "vector loads: no index declaration", None
    try:
        span = span_read.match(ctx, [m.index_decl, *m.guarded], m.parsed, set(), m.block,
                               frozenset({m.hist}))
    except span_read.NotSpan as exc:
        return f"vector loads: {exc}", None
    q = ctx.kernel.parameter(span.buffer)
    if q.type in ctx.kernel.template_parameters:
        return f"vector loads: {span.buffer} holds the template type {q.type}", None
    ctype = " ".join(w for w in q.type.split() if w not in ("const", "volatile",
                                                            "__restrict__"))
    nbytes = element_bytes(ctx.spec.param(span.buffer).type)
    if nbytes not in (1, 2, 4, 8):
        return f"vector loads: {span.buffer} has {nbytes}-byte elements", None
    return None, _VectorPlan(span, ctype, VECTOR_BYTES // nbytes)


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """Per block at 8, 4, 16 and 32 blocks per SM, then per warp where the copies fit; where
    the vector form applies (module doc), each of those with ``vector`` = 16 / element bytes
    first, then the scalar ones (``vector`` 1)."""
    ctx = bound_locals.fold(ctx)
    reason, m = _match(ctx)
    if m is None:
        return ({"per_warp": False, "blocks_per_sm": 8, "vector": 1},)
    space = [{"per_warp": False, "blocks_per_sm": k} for k in (8, 4, 16, 32)]
    if m.block % WARP == 0 and _warps(m) * m.bins * m.element_bytes <= MAX_STATIC_SHARED:
        space += [{"per_warp": True, "blocks_per_sm": k} for k in (8, 16)]
    why, plan = _vector_plan(ctx, m)
    vectors = [] if plan is None else [{**s, "vector": plan.width} for s in space]
    return tuple(vectors + [{**s, "vector": 1} for s in space])


def apply(ctx: PassContext, per_warp: bool = False, blocks_per_sm: int = 8,
          vector: Optional[int] = None) -> PassResult:
    """The privatized histogram; the grid becomes ``min(ceil_div(n, block.x), sm_count *
    blocks_per_sm)``, the block is the spec's. ``vector`` > 1: the int4 grid-stride loop
    with the alignment test and the scalar tail (module doc); 1: scalar loads only; None
    (the default): the vector form where it applies, as ``parameter_space`` offers first.

    Raises:
        PassNotApplicable: the kernel does not match, ``per_warp`` copies do not fit in
            shared memory, or ``vector`` > 1 where the read is not one contiguous input
            (the message says why).
        ValueError: ``blocks_per_sm`` is not one of 4, 8, 16, 32, or ``vector`` is neither 1
            nor 16 / the read's element bytes.
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
    plan = None
    if vector is None:
        plan = _vector_plan(ctx, m)[1]
    elif vector != 1:
        why, plan = _vector_plan(ctx, m)
        if plan is None:
            raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {why}")
        if vector != plan.width:
            raise ValueError(f"hist_privatize: vector is 1 or {plan.width} for "
                             f"{plan.span.buffer}, not {vector}")
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

    def element(depth: int, extra=()) -> None:
        """The original per-element statements, ``bins`` replaced by the private copy."""
        for stmt in m.guarded:
            reps = [(u, mine) for u in m.hist_uses
                    if stmt.start_byte <= u.start_byte < stmt.end_byte]
            reps += [(n, t) for n, t in extra if stmt.start_byte <= n.start_byte < stmt.end_byte]
            w.text_block(depth, structural.text_with(p, stmt, reps))

    stride = "gridDim.x * blockDim.x"
    if plan is not None:
        buf, width = plan.span.buffer, plan.width
        q, j, elems = w.fresh("q"), w.fresh("j"), w.fresh("elems")
        w(1, f"// int4 loads of {width} elements of {buf} where it starts 16-byte aligned "
             f"(an offset pointer need not), the ragged tail and a misaligned {buf} one by "
             f"one")
        w(1, f"if (reinterpret_cast<size_t>({buf}) % {VECTOR_BYTES} == 0) {{")
        w(2, f"for ({index_type} {q} = {m.index_init}; {q} < ({m.bound}) / {width}; "
             f"{q} += {stride}) {{")
        w(3, f"alignas({VECTOR_BYTES}) {plan.ctype} {elems}[{width}];")
        w(3, f"*reinterpret_cast<int4*>({elems}) = reinterpret_cast<const int4*>({buf})[{q}];")
        w(3, "#pragma unroll")
        w(3, f"for (int {j} = 0; {j} < {width}; ++{j}) {{")
        reads = [(r.start_byte, r.end_byte) for r in plan.span.reads]
        if any(n.type == "identifier" and p.text_of(n) == m.index and
               not any(a <= n.start_byte < b for a, b in reads)
               for stmt in m.guarded for n in walk(stmt)):
            w(4, f"{index_type} {m.index} = {q} * {width} + {j};")  # the statements use it
        element(4, [(r, f"{elems}[{j}]") for r in plan.span.reads])
        w(3, "}")
        w(2, "}")
        w(2, f"for ({index_type} {m.index} = ({m.bound}) / {width} * {width} + "
             f"{m.index_init}; {m.index} < {m.bound}; {m.index} += {stride}) {{")
        element(3)
        w(2, "}")
        w(1, "} else {")
        w(2, f"for ({index_type} {m.index} = {m.index_init}; {m.index} < {m.bound}; "
             f"{m.index} += {stride}) {{")
        element(3)
        w(2, "}")
        w(1, "}")
    else:
        w(1, f"for ({index_type} {m.index} = {m.index_init}; {m.index} < {m.bound}; "
             f"{m.index} += {stride}) {{")
        element(2)
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
    if plan is not None:
        explanation += (f"; the grid-stride loop loads {plan.width} elements of "
                        f"{plan.span.buffer} at a time (int4) where the pointer is 16-byte "
                        f"aligned, tested at run time, the rest one by one")
    tag = "hist-privatize-warp" if per_warp else "hist-privatize"
    tags = (tag, grid_choice.grid_tag(blocks_per_sm)) + ((f"vec{plan.width}",) if plan else ())
    return PassResult(source=source, launch=launch, tags=tags,
                      explanation=explanation)
