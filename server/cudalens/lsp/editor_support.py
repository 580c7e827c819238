"""Commands for editors that show candidates themselves (the VS Code extension): a
candidate's whole text, and the runner's state.

* ``cudalens.candidateSource`` — argument ``{"uri", "kernel", "candidate"}`` (as the
  ``showDiff`` lens sends it). Answers ``{"ok": true, "text": ..., "label": ...,
  "title": ...}``: the open document's text with the candidate applied (the text that
  ``cudalens.apply`` would leave), for a side-by-side diff over a read-only document. A
  stale result or an unknown candidate answers ``{"ok": false, "reason": ...}`` and, unlike
  the other commands, shows no message: the editor asks this while rendering and says it.
* ``cudalens.runnerStatus`` — no argument (or one object, ignored). Answers
  ``{"state": "idle"|"queued"|"running", "kernel": ..., "message": ..., "queued": N,
  "runner": "local GPU"|URL, "device": "NVIDIA H200"|null, "deviceId": ...|null}``:
  ``device`` is the GPU last seen by the configured runner (kept in the results store), so
  asking never connects to a runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cudalens.lsp.commands import KernelArgs
from cudalens.lsp.edits import Refused, candidate_text
from cudalens.lsp.wording import speedup_ci

if TYPE_CHECKING:
    from cudalens.lsp.session import Session

CANDIDATE_SOURCE = "cudalens.candidateSource"
RUNNER_STATUS = "cudalens.runnerStatus"

ALL = (CANDIDATE_SOURCE, RUNNER_STATUS)


def candidate_source(session: Session, args: KernelArgs) -> dict[str, Any]:
    """The document's text with ``args.candidate`` applied (see the module doc)."""
    snapshot = session.snapshot(args.uri)
    if snapshot is None:
        return {"ok": False, "reason": f"{args.uri} is not an open CUDA document"}
    try:
        status = session.status(snapshot, args.kernel)
        if status.current is None:
            raise Refused(f"the results for {args.kernel} are stale; run Optimize again")
        cand = status.current.candidate(args.candidate)
        text = candidate_text(snapshot, status.view, status.current, cand)
    except Refused as exc:
        return {"ok": False, "reason": str(exc)}
    except KeyError as exc:
        return {"ok": False, "reason": str(exc.args[0])}
    title = (f"{cand.label}: {speedup_ci(cand)} faster on {status.current.device.name}, "
             f"verified")
    return {"ok": True, "text": text, "label": cand.label, "title": title,
            "explanation": cand.explanation, "version": snapshot.version}


def runner_status(session: Session) -> dict[str, Any]:
    """The optimize queue's state and the configured runner's last seen GPU."""
    jobs = session.jobs
    running = jobs.running if jobs.running is not None and jobs.running.state == "running" \
        else None
    queued = [j for j in jobs.queue if j.state == "queued"]
    head = running or (queued[0] if queued else None)
    device_id: str | None = session.device
    return {
        "state": "running" if running else ("queued" if queued else "idle"),
        "kernel": head.kernel if head else None,
        "message": head.message if head else None,
        "queued": len(queued),
        "runner": session.settings.runner_url or "local GPU",
        "device": device_id.rsplit("/", 2)[0] if device_id else None,
        "deviceId": device_id,
    }
