"""Pass ``warp_reduce``: a shared-memory tree reduction replaced by warp shuffles.

The tree (``cudalens.optimizer.block_reduction``) combines a block's ``B`` values in
``log2(B)`` rounds through shared memory with a ``__syncthreads()`` after each; in the
interleaved forms most threads of each warp idle (divergence) and the strided ``s[2 * st *
tid]`` accesses cause bank conflicts. The rewrite keeps each thread's value in a register,
combines each warp's 32 values with 5 ``__shfl_down_sync`` steps (register to register, no
shared memory, no barrier), stores one value per warp in shared memory, and lets the first
warp combine those (CUDA C++ Programming Guide, "Warp Shuffle Functions"; J. Luitjens,
"Faster Parallel Reductions on Kepler", NVIDIA developer blog, 2014). One barrier remains.

The output keeps its meaning: the same statement (``partial[blockIdx.x] = s[0]``, an
``atomicAdd``...) runs in thread 0 with the block's combined value, for the same block size
and the same elements per block. For floating-point sums the order of the additions changes
(pairwise within a warp, then across warps), so results can differ in the last bits: within
the tolerance the runner checks, not bit for bit. ``max``/``min`` combines are exact; one
written as a comparison (``if (s[t + st] > s[t]) s[t] = s[t + st];``) is combined with the
same comparison, the same result for inputs without NaN (``cudalens.optimizer.minmax``).

Applies when: the tree is one of the recognized forms, the spec's block is 1D with a power of
two from 32 to 1024 threads (the tree forms are only correct for powers of two; the rewrite
needs whole warps), and the kernel does not index along y or z. No parameters; the launch
configuration is unchanged. The tree's array may be ``extern`` (dynamic shared memory),
also as a typed view of a byte array (``float* s = reinterpret_cast<float*>(smem);``,
``cudalens.optimizer.block_reduction``): the rewrite no longer reads it, and the launch keeps
the spec's dynamic shared bytes, so the candidate stays a drop-in under the user's launch.
"""

from __future__ import annotations

import re
from typing import Optional

from cudalens.optimizer.reasons import reason_of
from cudalens.optimizer import block_reduction, minmax, structural
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.passes.launch_config import baseline_block

name = "warp_reduce"

WARP = 32  # threads per warp on every NVIDIA GPU to date


def _plan(ctx: PassContext) -> tuple[Optional[str], Optional[block_reduction.TreeReduction], int]:
    block = baseline_block(ctx)
    if block is None:
        return "the spec's block cannot be evaluated", None, 0
    if block[1] != 1 or block[2] != 1:
        return (f"the spec's block {block[0]}x{block[1]}x{block[2]} is not 1D; the pass "
                f"rewrites 1D block reductions"), None, 0
    bx = block[0]
    if bx < WARP or bx & (bx - 1):
        return (f"the spec's block of {bx} threads is not a power of two of at least {WARP} "
                f"(whole warps)"), None, 0
    body = ctx.text[ctx.kernel.body_start_byte:ctx.kernel.body_end_byte]
    if re.search(r"\b(threadIdx|blockDim)\s*\.\s*[yz]\b", body):
        return "the kernel indexes threads along y or z", None, 0
    try:
        return None, block_reduction.match(ctx, bx), bx
    except block_reduction.NotTreeReduction as exc:
        return reason_of(exc), None, bx


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel is a recognized shared-memory tree reduction, else the reason."""
    return _plan(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """No parameters: one application."""
    return ({},)


def _combine_lines(combine: str, v: str, other: str, temp: tuple[str, str]) -> list[str]:
    """``v`` combined with the shuffle ``other``; a max/min written as a comparison keeps its
    comparison, the shuffle first stored in ``temp`` (type, name) so every lane runs it."""
    return minmax.combine_lines(v, combine, other, temp if minmax.is_conditional(combine)
                                else None)


_FORMS = {1: "interleaved addressing with a modulo test (divergent warps)",
          2: "interleaved addressing with a strided index (shared-memory bank conflicts)",
          3: "sequential addressing"}


def apply(ctx: PassContext) -> PassResult:
    """The warp-shuffle reduction; the launch configuration is unchanged.

    Raises:
        PassNotApplicable: the precondition fails (the message says why).
    """
    reason, m, bx = _plan(ctx)
    if reason is not None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    p = m.parsed
    w = structural.Layout(ctx)
    v, lane, warp, off, nwarps, slots = (w.fresh(n) for n in
                                         ("v", "lane", "warp", "offset", "n_warps", "warp_vals"))
    etype = " ".join(m.element_type.split())
    w(1, "// Reduce in registers with warp shuffles; only one value per warp goes through "
         "shared memory.")
    w(1, f"{etype} {v};")
    for stmt in m.load:
        uses = [u for u in m.load_uses if stmt.start_byte <= u.start_byte < stmt.end_byte]
        w.text_block(1, structural.text_with(p, stmt, [(u, v) for u in uses]))
    w(1, f"const unsigned int {lane} = threadIdx.x % {WARP}u;")
    w(1, f"const unsigned int {warp} = threadIdx.x / {WARP}u;")
    w(1, "#pragma unroll")
    w(1, f"for (int {off} = {WARP // 2}; {off} > 0; {off} /= 2) {{")
    other = w.fresh("other")
    for line in _combine_lines(m.combine, v, f"__shfl_down_sync(0xffffffffu, {v}, {off})",
                               (etype, other)):
        w(2, line)
    w(1, "}")
    w(1, f"__shared__ {etype} {slots}[{WARP}];")
    w(1, f"if ({lane} == 0) {slots}[{warp}] = {v};")
    w(1, "__syncthreads();")
    w(1, f"if ({warp} == 0) {{")
    w(2, f"const unsigned int {nwarps} = blockDim.x / {WARP}u;")
    w(2, f"if ({lane} < {nwarps}) {v} = {slots}[{lane}];")
    w(2, f"for (unsigned int {off} = {nwarps} / 2; {off} > 0; {off} /= 2) {{")
    for line in _combine_lines(m.combine, v, f"__shfl_down_sync(0xffffffffu, {v}, {off})",
                               (etype, other)):
        w(3, line)
    w(2, "}")
    w(1, "}")
    w.text_block(1, structural.text_with(p, m.final, [(u, v) for u in m.final_uses]))
    source = w.source()
    rounds = bx.bit_length() - 1
    what = minmax.label(m.combine)
    order = (" (the float summation order changes: results may differ in the last bits, "
             "within the tolerance the runner checks)" if m.combine == "+" else "")
    if minmax.is_conditional(m.combine):
        order = f" ({minmax.NAN_CAVEAT})"
    explanation = (f"warp-shuffle reduction instead of the shared-memory tree "
                   f"({_FORMS[m.form]}): each warp combines its {WARP} values in registers "
                   f"with 5 __shfl_down_sync steps, so {rounds} rounds of shared-memory "
                   f"read-modify-writes and {rounds + 1} __syncthreads() per block become one "
                   f"shared store per warp and one barrier; the same per-block {what} of "
                   f"{bx} values{order}")
    return PassResult(source=source, launch=ctx.launch, tags=("warp-reduce",),
                      explanation=explanation)
