"""``cudalens.kernelReport``: the kernel report page of a kernel's stored run, for editors that
show HTML themselves (the VS Code extension's webview).

Argument ``{"uri", "kernel"}`` (as the code lens sends it; ``version`` ignored). Answers
``{"ok": true, "html": ..., "title": ..., "key": ..., "created": ..., "stale": bool}``: the page
of ``cudalens.report.page`` for the kernel's current run, else its latest stale one (then
``stale`` is true and the page says so), built from the results store. ``key``/``created``
name the run, so a client can tell when a newer one was stored. Without a stored run, or
without matplotlib, it answers ``{"ok": false, "reason": ...}``.

Run stored: after each stored run the server sends the notification ``cudalens/runStored``
``{"uri", "kernel", "key"}`` (``Notifier.run_stored``), so an open report can ask again.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from cudalens.errors import CudalensError
from cudalens.lsp.commands import KernelArgs

if TYPE_CHECKING:
    from cudalens.lsp.session import Session
    from cudalens.store.records import RunRecord

KERNEL_REPORT = "cudalens.kernelReport"

ALL = (KERNEL_REPORT,)


def _element_types(spec) -> tuple[str, ...]:
    """numpy dtype names of the spec's buffers and scalars (unknown names left out)."""
    from cudalens.spec.dtypes import SPEC_TYPES

    if spec is None:
        return ()
    return tuple(sorted({SPEC_TYPES[p.type] for p in spec.params if p.type in SPEC_TYPES}))


async def kernel_report(session: Session, args: KernelArgs) -> dict[str, Any]:
    """The report of ``args.kernel`` in the open document ``args.uri`` (module doc). The run is
    read on the event loop; the page (matplotlib: a fraction of a second) is drawn in a thread,
    so the server goes on answering meanwhile."""
    from cudalens.report.data import from_run_record
    from cudalens.report.page import report_html

    snapshot = session.snapshot(args.uri)
    if snapshot is None:
        return {"ok": False, "reason": f"{args.uri} is not an open CUDA document"}
    try:
        status = session.status(snapshot, args.kernel)
    except KeyError as exc:
        return {"ok": False, "reason": str(exc.args[0])}
    run: RunRecord | None = status.current or status.stale
    if run is None:
        return {"ok": False, "reason": f"no stored run of {args.kernel} yet: run Optimize "
                                       f"first"}
    report = from_run_record(run, _element_types(status.view.spec))
    if status.current is None:
        report = _marked_stale(report)
    try:
        page = await asyncio.to_thread(report_html, report)
    except CudalensError as exc:  # ChartUnavailable: matplotlib is missing
        return {"ok": False, "reason": str(exc)}
    return {"ok": True, "html": page, "title": f"cudalens report: {args.kernel}",
            "key": run.key, "created": run.created, "stale": status.current is None}


def _marked_stale(report):
    import dataclasses

    return dataclasses.replace(report, provenance=report.provenance + "; STALE: the kernel, "
                               "its spec or the device changed since this run")

