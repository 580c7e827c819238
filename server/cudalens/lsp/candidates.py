"""The candidate commands: optimize, cancel, apply, reject, show diff.

Each returns a JSON object saying what happened (``{"applied": false, "reason": ...}``), so
a client or a test can act on it, and tells the user with ``window/showMessage``.

* **apply** plans the edit (``edits.plan_apply``: version, staleness, verification,
  rejection), sends ``workspace/applyEdit`` and reports the client's answer. When the edit
  is applied and the spec will describe the candidate's launch, the candidate's own
  measurement is stored under the key of the new text (``edits.derived_run``), so the kernel
  shows the time it was measured at instead of "stale".
* **reject** records the candidate as rejected for the kernel's current key: it is not
  offered again for this source (the next fastest candidate, if any, is).
* **showDiff** writes the diff to ``.cudalens/diffs/`` and asks the client to show it
  (``window/showDocument``), and returns the diff text.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from cudalens.errors import CudalensError
from cudalens.lsp.commands import KernelArgs
from cudalens.lsp.documents import DocumentSnapshot, path_to_uri
from cudalens.lsp.edits import (Refused, as_changes, candidate_text, derived_run, plan_apply,
                                unified_diff)
from cudalens.lsp.results import KernelStatus
from cudalens.lsp.wording import speedup_ci
from cudalens.store.keys import device_id, result_key

if TYPE_CHECKING:
    from cudalens.lsp.session import Session

log = logging.getLogger(__name__)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _locate(session: "Session", args: KernelArgs) -> tuple[DocumentSnapshot, KernelStatus]:
    snapshot = session.snapshot(args.uri)
    if snapshot is None:
        raise Refused(f"{args.uri} is not an open CUDA document")
    try:
        return snapshot, session.status(snapshot, args.kernel)
    except KeyError as exc:
        held = session.held(snapshot)
        if held is not None and held.find(args.kernel) is not None:
            raise Refused(f"{snapshot.path.name} does not parse at version {snapshot.version} "
                          f"(editing): {args.kernel} is shown as last parsed at version "
                          f"{held.last_good.version}; finish the edit and try again") from None
        raise Refused(str(exc.args[0])) from None


def _refuse(session: "Session", action: str, reason: str) -> dict[str, Any]:
    session.show_message(f"cudalens: {action}: {reason}", types.MessageType.Warning)
    return {"ok": False, "reason": reason}


async def optimize(session: "Session", args: KernelArgs) -> dict[str, Any]:
    try:
        snapshot, status = _locate(session, args)
        job = await session.jobs.submit(snapshot, status.view)
    except (Refused, CudalensError) as exc:
        return _refuse(session, "cannot optimize", str(exc))
    return {"ok": True, "job": job.id, "token": job.token, "state": job.state}


def cancel(session: "Session", args: KernelArgs) -> dict[str, Any]:
    job = session.jobs.active(args.uri, args.kernel)
    if job is None:
        return {"ok": False, "reason": f"no optimization of {args.kernel} is queued or running"}
    session.jobs.cancel(job)
    return {"ok": True, "job": job.id}


async def apply(session: "Session", args: KernelArgs) -> dict[str, Any]:
    try:
        snapshot, status = _locate(session, args)
        plan = plan_apply(snapshot, status, args.candidate, args.version,
                          session.spec_file_of(status.view))
    except Refused as exc:
        return _refuse(session, "candidate not applied", str(exc))
    name = status.view.kernel.name
    edit = plan.edit
    if not session.supports("workspace", "workspace_edit", "document_changes"):
        edit = as_changes(edit)
    answer = await session.server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(
        edit=edit, label=f"cudalens: apply {plan.candidate.label} to {name}"))
    if not answer.applied:
        reason = answer.failure_reason or "the editor gave no reason"
        return _refuse(session, "candidate not applied", f"the editor refused the edit: {reason}")
    if plan.material is not None:
        key = result_key(plan.material, device_id(plan.run.device))
        session.store.put_run(derived_run(plan, key, _now()))
        from cudalens.lsp.report_view import notify_run_stored
        notify_run_stored(session.server, args.uri, status.view.name, key)
    text = (f"Applied {plan.candidate.label} to {name}: {speedup_ci(plan.candidate)} faster, "
            f"verified against the original on {plan.run.device.name}.")
    if plan.launch_note:
        text += " " + plan.launch_note
    session.show_message(text, types.MessageType.Info)
    session.refresh()
    return {"ok": True, "applied": True, "version": snapshot.version,
            "candidate": plan.candidate.id, "note": plan.launch_note}


def reject(session: "Session", args: KernelArgs) -> dict[str, Any]:
    try:
        _, status = _locate(session, args)
        if status.current is None:
            raise Refused(f"the results for {args.kernel} are stale; nothing to reject")
        cand = status.current.candidate(args.candidate)
    except Refused as exc:
        return _refuse(session, "candidate not rejected", str(exc))
    except KeyError as exc:
        return _refuse(session, "candidate not rejected", str(exc.args[0]))
    session.store.reject(status.key, cand.id, _now())
    session.show_message(f"Rejected {cand.label} for {status.view.kernel.name}; it will not be "
                         f"offered again for this source.")
    session.refresh()
    return {"ok": True, "rejected": cand.id}


async def show_diff(session: "Session", args: KernelArgs) -> dict[str, Any]:
    try:
        snapshot, status = _locate(session, args)
        if status.current is None:
            raise Refused(f"the results for {args.kernel} are stale; run Optimize again")
        cand = status.current.candidate(args.candidate)
        new_text = candidate_text(snapshot, status.view, status.current, cand)
    except Refused as exc:
        return _refuse(session, "no diff", str(exc))
    except KeyError as exc:
        return _refuse(session, "no diff", str(exc.args[0]))
    root = session.roots[0] if session.roots else snapshot.path.parent
    try:
        shown = str(snapshot.path.relative_to(root))
    except ValueError:
        shown = snapshot.path.name
    diff = unified_diff(snapshot, new_text, shown)
    header = (f"# {cand.label}: {speedup_ci(cand)} faster on {status.current.device.name}, "
              f"verified\n# {cand.explanation}\n")
    result: dict[str, Any] = {"ok": True, "diff": diff}
    if session.state_dir is not None:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{snapshot.path.name}-{status.view.name}")
        out = session.state_dir / "diffs" / f"{safe}-{cand.id}.diff"
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(header + diff, encoding="utf-8")
        except OSError as exc:
            log.warning("cannot write %s: %s", out, exc)
        else:
            result["path"] = str(out)
            if session.supports("window", "show_document", "support"):
                session.server.window_show_document(types.ShowDocumentParams(
                    uri=path_to_uri(out), take_focus=True))
    return result
