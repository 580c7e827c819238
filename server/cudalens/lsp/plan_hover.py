"""The plan on a kernel's hover: what Optimize would time (``cudalens.engine.plan``), the
same facts ``cudalens plan`` prints, appended to the signature hover (the line the Optimize
lens sits on).

Markdown: the candidates in search order (at most ``SHOWN``; the first batch marked), then
every pass that does not apply with its line and reason. A kernel without a spec gets no plan
section (its spec diagnostic says why); while the file's last compile check failed, no plan is
made and the section says where the first error is.

Building a plan applies every pass (35 ms to 0.8 s for the examples on a 2-core machine), more
than a hover may take, so plans are built on one background thread and cached by document
text, kernel and spec: the first hover on a kernel version says the plan is being prepared and
starts it (dropping plans queued for earlier hovers that have not started); a hover once it is
ready shows it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Optional

from lsprotocol import types

from cudalens.engine.preflight import refuses
from cudalens.lsp.documents import DocumentSnapshot, KernelView
from cudalens.lsp.results import KernelStatus
from cudalens.lsp.wording import not_compiling
from cudalens.engine.plan import Plan, plan_for_document

SHOWN = 8
PENDING = "**Optimize plan**: being prepared (what the search would time); hover again in a moment."
_CACHE_SIZE = 32
_cache: "OrderedDict[tuple, Future]" = OrderedDict()
_lock = threading.Lock()
_executor: Optional[ThreadPoolExecutor] = None


def _build(snapshot: DocumentSnapshot, view: KernelView) -> Plan:
    return plan_for_document(str(snapshot.path), snapshot.text, snapshot.source, view.kernel,
                             view.spec, header_macros=snapshot.header_macros)


def plan_future(snapshot: DocumentSnapshot, view: KernelView) -> Optional[Future]:
    """The (possibly still running) plan of ``view``'s kernel in ``snapshot``, started on the
    background thread when new; None without a spec."""
    global _executor
    if view.spec is None:
        return None
    key = (snapshot.sha, view.name, view.material or repr(view.spec))
    with _lock:
        if key not in _cache:
            if _executor is None:
                _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cudalens-plan")
            for old, fut in list(_cache.items()):  # only the newest hover's plan waits
                if fut.cancel():
                    del _cache[old]
            _cache[key] = _executor.submit(_build, snapshot, view)
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
            where = f"line {n.line}" + (", the kernel" if n.at_kernel else "")
            lines.append(f"- `{n.pass_name}` ({where}): {n.reason}")
    return "\n".join(lines)


def with_plan(hover: Optional[types.Hover], snapshot: DocumentSnapshot,
              statuses: list[KernelStatus], position: types.Position,
              check=None) -> Optional[types.Hover]:
    """``hover`` (the signature hover, or None off a signature) with the plan of the kernel it
    is about appended; None stays None. ``check``: the document's last compile check; when it
    failed, the plan section says so instead."""
    if hover is None or not isinstance(hover.contents, types.MarkupContent):
        return hover
    if refuses(check):
        text = (f"{hover.contents.value}\n\n**Optimize plan**: none while the file does not "
                f"compile ({not_compiling(snapshot.path, check)})")
        return types.Hover(contents=types.MarkupContent(types.MarkupKind.Markdown, text),
                           range=hover.range)
    view = next((st.view for st in statuses
                 if snapshot.name_range(st.view) == hover.range), None)
    if view is None:
        view = snapshot.kernel_at(position)
    future = plan_future(snapshot, view) if view is not None else None
    if future is None:
        return hover
    if not future.done():
        section = PENDING
    elif future.exception() is not None:
        section = f"**Optimize plan**: could not be built ({future.exception()})"
    else:
        section = plan_markdown(future.result())
    text = f"{hover.contents.value}\n\n{section}"
    return types.Hover(contents=types.MarkupContent(types.MarkupKind.Markdown, text),
                       range=hover.range)
