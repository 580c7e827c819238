"""The candidate commands: optimize, cancel, apply, reject, show diff.

Each returns a JSON object saying what happened (``{"applied": false, "reason": ...}``), so
a client or a test can act on it, and tells the user with ``window/showMessage``.

* **apply** plans the edit (``edits.plan_apply``: version, staleness, verification,
  rejection; the kernel's launch sites in the workspace rewritten when the candidate needs
  another launch), asks first with ``window/showMessageRequest`` (``Apply anyway`` /
  ``Cancel``) when the candidate needs its launch and some launch cannot be rewritten or none
  is found, sends ``workspace/applyEdit`` and reports the client's answer. When the edit
  is applied and the spec will describe the candidate's launch, the candidate's own
  measurement is stored under the key of the new text (``edits.derived_run``), so the kernel
  shows the time it was measured at instead of "stale".
* **reject** records the candidate as rejected for the kernel's current key: it is not
  offered again for this source (the next fastest candidate, if any, is).
* **showDiff** writes the diff to ``.cudalens/diffs/`` and asks the client to show it
  (``window/showDocument``), and returns the diff text (``diff``: the kernel's file;
  ``host``: the launch sites apply would rewrite, and those it cannot).
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
from cudalens.lsp.launch_edits import drop_in_phrase
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
    session.notifier.show_message(f"cudalens: {action}: {reason}", types.MessageType.Warning)
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


def _open_documents(session: "Session") -> dict:
    """Path -> ``launch_edits.OpenDocument`` of every open document the session parsed."""
    from cudalens.lsp.launch_edits import OpenDocument

    out = {}
    for u in session.open_uris():
        snap = session.snapshot(u)
        if snap is not None:
            out[snap.path.resolve()] = OpenDocument(snap.uri, snap.text, snap.version)
    return out


async def _confirmed(session: "Session", question: str) -> bool:
    """Asks ``question`` (``window/showMessageRequest``, a modal in VS Code); True only when
    the user picked ``Apply anyway``."""
    from cudalens.lsp.launch_edits import APPLY_ANYWAY, CANCEL

    try:
        answer = await session.server.window_show_message_request_async(
            types.ShowMessageRequestParams(
                type=types.MessageType.Warning, message=f"cudalens: {question}",
                actions=[types.MessageActionItem(APPLY_ANYWAY),
                         types.MessageActionItem(CANCEL)]))
    except Exception as exc:  # a client without the request: nothing is applied
        log.info("window/showMessageRequest failed: %s", exc)
        return False
    return answer is not None and answer.title == APPLY_ANYWAY


async def apply(session: "Session", args: KernelArgs) -> dict[str, Any]:
    try:
        snapshot, status = _locate(session, args)
        root = session.roots[0] if session.roots else snapshot.path.parent
        plan = plan_apply(snapshot, status, args.candidate, args.version,
                          session.spec_file_of(status.view), root=root,
                          open_docs=_open_documents(session))
    except Refused as exc:
        return _refuse(session, "candidate not applied", str(exc))
    name = status.view.kernel.name
    if plan.confirm and not await _confirmed(session, plan.confirm):
        host = plan.host.plan
        return {"ok": False, "applied": False, "reason": plan.confirm,
                "launch": {"block": list(plan.candidate.launch.block),
                           "grid": list(plan.candidate.launch.grid),
                           "shared": plan.candidate.launch.shared},
                "sites": [{"path": str(u.path), "line": u.line, "column": u.column,
                           "reason": u.reason} for u in host.unmapped]}
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
        session.notifier.run_stored(args.uri, status.view.name, key)
    text = (f"Applied {plan.candidate.label} to {name}: {speedup_ci(plan.candidate)} faster, "
            f"verified against the original on {plan.run.device.name}.")
    if plan.launch_note:
        text += " " + plan.launch_note
    session.notifier.show_message(text, types.MessageType.Info)
    session.notifier.refresh()
    rewritten = [] if plan.host is None else [
        {"path": str(e.path), "line": e.line, "column": e.column, "old": e.config, "new": e.new}
        for e in plan.host.plan.edits]
    return {"ok": True, "applied": True, "version": snapshot.version,
            "candidate": plan.candidate.id, "note": plan.launch_note, "launches": rewritten}


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
    session.notifier.show_message(f"Rejected {cand.label} for {status.view.kernel.name}; it will "
                                  f"not be offered again for this source.")
    session.notifier.refresh()
    return {"ok": True, "rejected": cand.id}


def _host_diff(session: "Session", snapshot: DocumentSnapshot, status: KernelStatus, cand,
               new_text: str, root) -> str:
    """The unified diff of the launch sites ``apply`` would rewrite (the kernel's own file's
    sites are in its diff only when it holds launches), and a comment line per launch that
    cannot be rewritten, or that none was found."""
    from cudalens.diffs import unified_diff as text_diff
    from cudalens.lsp.launch_edits import host_changes

    changes = host_changes(root, snapshot.path, new_text, status.view.kernel, status.view.spec,
                           cand, _open_documents(session))
    plan = changes.plan
    out = []
    for path, text in plan.new_texts().items():
        # the kernel's own file: its diff above shows the candidate; this one its launches
        old = plan.texts[path]
        try:
            shown = str(path.relative_to(root))
        except ValueError:
            shown = str(path)
        out.append(text_diff(old, text, f"a/{shown}", f"b/{shown}"))
    for u in plan.unmapped:
        out.append(f"# not rewritten: {u.where(root)}: {u.call} ({u.reason})\n")
    if not plan.found:
        out.append(f"# no launch of {status.view.kernel.name} was found in the workspace\n")
    return "".join(out)


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
    phrase = drop_in_phrase(cand)
    host = ""
    if phrase:
        header += f"# under your launch: {phrase}\n"
        host = _host_diff(session, snapshot, status, cand, new_text, root)
    # "diff": the kernel's file; "host": the launch sites apply rewrites (the shown file has both)
    result: dict[str, Any] = {"ok": True, "diff": diff, "host": host}
    if session.state_dir is not None:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{snapshot.path.name}-{status.view.name}")
        out = session.state_dir / "diffs" / f"{safe}-{cand.id}.diff"
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(header + diff + host, encoding="utf-8")
        except OSError as exc:
            log.warning("cannot write %s: %s", out, exc)
        else:
            result["path"] = str(out)
            if session.supports("window", "show_document", "support"):
                session.server.window_show_document(types.ShowDocumentParams(
                    uri=path_to_uri(out), take_focus=True))
    return result
