"""The written spec's outputs against what the kernel provably writes: an ``out`` or
``inout`` buffer shorter, at the nominal sizes, than the length spec inference derives from
the body's bounds checks is refused when the spec is loaded (``spec.parser.load_spec``),
before a runner would fault on it. Kept apart from ``spec.validate`` because it runs the
inference, which itself uses ``validate``'s parameter checks. The draft is made once per text
and kernel and kept with the kernel's model (``drafted_for``): the language server loads a
written spec again on every re-analysis that misses its spec cache."""

from __future__ import annotations

import re
from typing import Optional

from cudalens.kernel_model.model import kernel_fact
from cudalens.source.model import Kernel
from cudalens.spec import dtypes
from cudalens.spec.errors import SpecError
from cudalens.spec.expr import ExprError, evaluate
from cudalens.spec.infer import infer_spec
from cudalens.spec.model import BufferDecl, KernelSpec, ScalarDecl
from cudalens.spec.resolve import sizes_for


def drafted_for(kernel: Kernel, source_text: str, instance: Optional[str]) -> Optional[KernelSpec]:
    """The draft ``check_lengths`` compares with (``infer_spec`` of ``kernel`` in
    ``source_text``, of ``instance`` when given), None where inference fails; drafted once per
    (text, kernel, instance, launch sites) and kept in the kernel's model
    (``kernel_model.model.kernel_fact``), so loading the same spec with the same source again
    (a lens refresh, a hover, every kernel after a spec file's edit) does not draft again."""
    def draft() -> Optional[KernelSpec]:
        try:
            return infer_spec(kernel, source_text, instance=instance)
        except (SpecError, ExprError, ValueError, LookupError, KeyError, TypeError):
            return None

    return kernel_fact(source_text, kernel, ("output_lengths.draft", instance,
                                             kernel.launch_sites), draft)


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
    instance = spec.kernel if "<" in spec.kernel else None
    draft = drafted_for(kernel, source_text, instance)
    if draft is None:
        return
    try:
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
