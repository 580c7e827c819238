"""The written spec's outputs against what the kernel provably writes: an ``out`` or
``inout`` buffer shorter, at the nominal sizes, than the length spec inference derives from
the body's bounds checks is refused when the spec is loaded (``spec.parser.load_spec``),
before a runner would fault on it. Kept apart from ``spec.validate`` because it runs the
inference, which itself uses ``validate``'s parameter checks."""

from __future__ import annotations

import re

from cudalens.source.model import Kernel
from cudalens.spec import dtypes
from cudalens.spec.errors import SpecError
from cudalens.spec.expr import ExprError, evaluate
from cudalens.spec.infer import infer_spec
from cudalens.spec.model import BufferDecl, KernelSpec, ScalarDecl
from cudalens.spec.resolve import sizes_for


def check_lengths(spec: KernelSpec, kernel: Kernel, source_text: str) -> None:
    """Raises :class:`SpecError` when an ``out``/``inout`` buffer is shorter, at the spec's
    nominal sizes, than what the kernel provably writes: the length spec inference derives
    from the body's bounds checks (``spec.infer``; lengths it only assumes, or pads, and
    buffers that escape the analysis are not checked). The runner would otherwise fault
    later, or guard regions would catch the writes as out of bounds. Both lengths are
    evaluated with the spec's sizes and its scalars' values for the kernel's integer
    parameters; anything that cannot be evaluated is not checked, nor lengths that follow the
    draft's launch (a buffer indexed by blockIdx is as long as the draft's grid, which its
    block decides)."""
    outputs = [d for d in spec.params if isinstance(d, BufferDecl) and d.role != "in"]
    if not outputs:
        return
    try:
        instance = spec.kernel if "<" in spec.kernel else None
        draft = infer_spec(kernel, source_text, instance=instance)
        env = dict(sizes_for(spec, "nominal"))
    except (SpecError, ExprError, ValueError, LookupError, KeyError, TypeError):
        return
    if "<" in draft.kernel and "<" not in spec.kernel:
        return  # the draft guessed a template instance: its lengths may not be the spec's
    denv: dict[str, object] = dict(spec.constants)
    for d in spec.params:
        if isinstance(d, ScalarDecl) and dtypes.is_float(d.type) is False:
            try:
                denv[d.name] = evaluate(d.expr, env)
            except (ExprError, ValueError, TypeError, ZeroDivisionError, KeyError):
                pass
    for d in draft.params:  # the draft's sizes are named by the parameters they are passed to
        if isinstance(d, ScalarDecl) and d.name in denv and re.fullmatch(r"\w+", d.expr):
            denv.setdefault(d.expr, denv[d.name])
    if any(n.startswith("block fixed at") for n in draft.notes):
        return  # lengths that follow the draft's grid and block, not the spec's
    drafted = {d.name: d for d in draft.params if isinstance(d, BufferDecl)}
    path = spec.source or "<spec>"
    for decl in outputs:
        mine = drafted.get(decl.name)
        if mine is None or mine.type != decl.type or "block" in mine.length or any(
                n.startswith((f"length of {decl.name} ", f"{decl.name}: ")) and
                ("assumed" in n or "GUESS" in n or "cannot follow" in n) for n in draft.notes):
            continue
        try:
            need = evaluate(mine.length, denv)
            have = evaluate(decl.length, env)
        except (ExprError, ValueError, TypeError, ZeroDivisionError, KeyError):
            continue
        if isinstance(need, int) and isinstance(have, int) and have < need:
            raise SpecError(path, decl.line, f"kernel {kernel.name} writes {decl.name} up to "
                            f"{mine.length} elements (from its bounds checks; {need:,} at the "
                            f"nominal sizes), but the spec gives it {decl.length} ({have:,}): "
                            f"expected a length of at least {mine.length}")
