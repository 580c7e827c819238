"""A toy pass for tests (docs/architecture.md, "How to add things: a pass"): ``toy_restrict``
marks every pointer parameter of the kernel ``__restrict__`` (no aliasing between them), so
the compiler may keep loaded values in registers across stores.

Test-only: it edits the signature's text, without the aliasing analysis of the real
``restrict_const`` pass, so it is only right for kernels whose pointers never alias.
"""

from __future__ import annotations

from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable

name = "toy_restrict"


def _signature(ctx: PassContext) -> tuple[int, int]:
    """Character offsets of the kernel's parameter list, ``(`` to ``)``."""
    data = ctx.text.encode("utf-8")
    head = data[ctx.kernel.start_byte:ctx.kernel.end_byte].split(b"{", 1)[0]
    start = ctx.kernel.start_byte + head.index(b"(")
    end = ctx.kernel.start_byte + head.rindex(b")")
    return len(data[:start].decode("utf-8")), len(data[:end].decode("utf-8"))


def check(ctx: PassContext):
    start, end = _signature(ctx)
    params = ctx.text[start:end]
    if "*" not in params:
        return "the kernel has no pointer parameters"
    if "__restrict__" in params:
        return "the kernel's pointers are already marked __restrict__"
    return None


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    return ({},)


def apply(ctx: PassContext) -> PassResult:
    reason = check(ctx)
    if reason is not None:
        raise PassNotApplicable(reason)
    start, end = _signature(ctx)
    params = ctx.text[start:end].replace("* ", "* __restrict__ ")
    return PassResult(source=ctx.text[:start] + params + ctx.text[end:], launch=ctx.launch,
                      tags=("toy-restrict",),
                      explanation="marks the pointer parameters __restrict__ (toy pass)")
