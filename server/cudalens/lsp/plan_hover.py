"""The plan on a kernel's hover: what Optimize would time (``cudalens.optimizer.plan``), the
same facts ``cudalens plan`` prints, appended to the signature hover (the line the Optimize
lens sits on).

Markdown: the candidates in search order (at most ``SHOWN``; the first batch marked), then
every pass that does not apply with its line and reason. A kernel without a spec gets no plan
section (its spec diagnostic says why). Plans are cached by document text and kernel, so a
repeated hover costs nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Optional

from lsprotocol import types

from cudalens.lsp.documents import DocumentSnapshot, KernelView
from cudalens.lsp.results import KernelStatus
from cudalens.optimizer.plan import Plan, make_plan

SHOWN = 8
_CACHE_SIZE = 32
_cache: "OrderedDict[tuple, Plan]" = OrderedDict()


def plan_for(snapshot: DocumentSnapshot, view: KernelView) -> Optional[Plan]:
    """The plan of ``view``'s kernel in ``snapshot``, None without a spec."""
    if view.spec is None:
        return None
    key = (snapshot.sha, view.name, view.material or repr(view.spec))
    if key not in _cache:
        from cudalens.optimizer.context import PassContext

        ctx = PassContext(path=str(snapshot.path), text=snapshot.text, source=snapshot.source,
                          kernel=view.kernel, spec=view.spec,
                          launch_sites=snapshot.source.launch_sites)
        _cache[key] = make_plan(ctx)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    _cache.move_to_end(key)
    return _cache[key]


def plan_markdown(plan: Plan) -> str:
    """The hover section for ``plan``."""
    lines = []
    if plan.candidates:
        lines.append(f"**Optimize would time** up to {len(plan.candidates)} candidates; the "
                     f"first batch ({len(plan.first_batch)}, marked \u2605) is fixed before "
                     f"anything is measured, later batches depend on the measurements:")
        for c in plan.candidates[:SHOWN]:
            star = " \u2605" if c.first_batch else ""
            lines.append(f"- `{c.label}`{star}: {', '.join(c.passes)}")
        if len(plan.candidates) > SHOWN:
            lines.append(f"- \u2026 and {len(plan.candidates) - SHOWN} more "
                         f"(`cudalens plan` lists them all)")
    else:
        lines.append("**Optimize would time nothing**: no pass applies.")
    if plan.not_applied:
        lines.append("")
        lines.append("**Passes that do not apply:**")
        for n in plan.not_applied:
            where = f"line {n.line}" + (" (the kernel)" if n.at_kernel else "")
            lines.append(f"- `{n.pass_name}` ({where}): {n.reason}")
    return "\n".join(lines)


def with_plan(hover: Optional[types.Hover], snapshot: DocumentSnapshot,
              statuses: list[KernelStatus], position: types.Position) -> Optional[types.Hover]:
    """``hover`` (the signature hover, or None off a signature) with the plan of the kernel it
    is about appended; None stays None."""
    if hover is None or not isinstance(hover.contents, types.MarkupContent):
        return hover
    view = next((st.view for st in statuses
                 if snapshot.name_range(st.view) == hover.range), None)
    if view is None:
        view = snapshot.kernel_at(position)
    plan = plan_for(snapshot, view) if view is not None else None
    if plan is None:
        return hover
    text = f"{hover.contents.value}\n\n{plan_markdown(plan)}"
    return types.Hover(contents=types.MarkupContent(types.MarkupKind.Markdown, text),
                       range=hover.range)
