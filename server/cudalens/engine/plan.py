"""The built-in search's plan for one kernel, made without a GPU: the candidates it would time
(label, passes, parameters, launch, explanation; the first batch marked) and, for each pass
that does not apply, the reason and line. ``cudalens plan`` prints it and the editor's hover on
the Optimize lens shows it; both ask here, so neither front end reaches into the optimizer.

``Plan`` is ``cudalens.optimizer.plan.Plan`` (its ``record()`` is the JSON the CLI writes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cudalens.kernel_model.macros import bind_header_macros
from cudalens.optimizer.context import PassContext, make_context
from cudalens.optimizer.plan import Plan, make_plan

if TYPE_CHECKING:
    from cudalens.source.model import Kernel, SourceFile
    from cudalens.spec.model import KernelSpec
    from cudalens.target import Target

__all__ = ["Plan", "plan_for_document", "plan_for_target"]


def plan_for_target(target: "Target", *, seed: int = 0, batch: int = 8) -> Plan:
    """The plan for a loaded target (``cudalens.target.load_target``), with the search's
    ``seed`` and ``batch`` size (candidates per runner call).

    Raises:
        ValueError: ``batch`` below 1."""
    ctx = make_context(target.text, str(target.path), target.kernel.qualified_name, target.spec,
                       source=target.source, header_macros=target.header_macros)
    return make_plan(ctx, seed=seed, batch=batch)


def plan_for_document(path: str, text: str, source: "SourceFile", kernel: "Kernel",
                      spec: "KernelSpec", header_macros=None) -> Plan:
    """The plan for ``kernel`` of an open document (its ``text`` and parsed ``source``, as the
    language server holds them), with the search's default seed and batch; ``header_macros``
    (the document's ``FileContext.macros``) makes the passes expand its headers' macros."""
    if header_macros is not None:
        bind_header_macros(text, header_macros)
    ctx = PassContext(path=path, text=text, source=source, kernel=kernel, spec=spec,
                      launch_sites=source.launch_sites, header_macros=header_macros)
    return make_plan(ctx)
