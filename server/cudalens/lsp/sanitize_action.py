"""The "Check this kernel for races and memory errors" code action and its background run.

The action (kind ``source.cudalens.sanitize``, on every kernel with a usable spec) runs the
command ``cudalens.sanitize`` (argument as every kernel command: ``{"uri", "kernel",
"version"}``). The command answers at once (``{"ok": true, "token": ...}``) and runs
compute-sanitizer's four tools on the kernel as written, on the GPU runner of the session's
settings (``cudalens.sanitize_check.sanitize_target``), in a background thread, with a
work-done progress (``cudalens/sanitize/N``) whose end says what was found.

Each finding becomes a diagnostic (source ``compute-sanitizer``, code its kind: ``race``,
``out-of-bounds read``, ...) from the first non-blank character of its line to the line's end:
an Error for a finding that makes the kernel unusable as a reference, else a Warning. A
finding outside the file (in a header, or without line info) goes on the kernel's name. The
diagnostics are merged into the document's publish (``Diagnostics.providers``) for as long as
the document's text is the one that was checked; an edit drops them (their lines may no longer
be the ones that were run), the next check brings them back. An optimize job refused because
the original has such findings (``jobs``, ``sanitize_check.OriginalUnsafe``) shows them the
same way (``SanitizerChecks.record``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from lsprotocol import types

from cudalens.errors import CudalensError
from cudalens.lsp import commands as cmd
from cudalens.lsp.background import Background, Words, open_kernel
from cudalens.lsp.commands import KernelArgs
from cudalens.lsp.documents import DocumentSnapshot, KernelView
from cudalens.lsp.positions import overlaps
from cudalens.lsp.results import KernelStatus
from cudalens.sanitize_check import Located, sanitize_target

if TYPE_CHECKING:
    from cudalens.lsp.config import Settings
    from cudalens.lsp.diagnostics import Diagnostics
    from cudalens.lsp.notifier import Notifier

log = logging.getLogger(__name__)

CHECK = "cudalens.sanitize"
KIND_CHECK = types.CodeActionKind.Source + ".cudalens.sanitize"
TITLE = "Check this kernel for races and memory errors"
SOURCE = "compute-sanitizer"


def check_actions(snapshot: DocumentSnapshot, statuses: list[KernelStatus],
                  rng: types.Range) -> list[types.CodeAction]:
    """The action for each kernel with a spec whose definition overlaps ``rng``."""
    out = []
    for st in statuses:
        if st.view.spec is None or not overlaps(snapshot.index.range(st.view.kernel.range), rng):
            continue
        args = KernelArgs(uri=snapshot.uri, kernel=st.name, version=snapshot.version)
        out.append(types.CodeAction(title=TITLE, kind=KIND_CHECK,
                                    command=cmd.command(TITLE, CHECK, args)))
    return out


@dataclass(frozen=True)
class Checked:
    """One finished check: the text it ran on and its located findings."""

    kernel: str
    text: str
    found: tuple[Located, ...]


def diagnostics_for(snapshot: DocumentSnapshot, checked: Checked,
                    view: Optional[KernelView]) -> list[types.Diagnostic]:
    """``checked``'s findings as diagnostics on ``snapshot`` (module doc)."""
    out = []
    for loc in checked.found:
        f = loc.finding
        if loc.line is not None:
            rng = types.Range(snapshot.index.from_char(loc.line, loc.column or 0),
                              snapshot.index.line_range(loc.line).end)
            where = ""
        elif view is not None:
            rng = snapshot.name_range(view)
            where = f" (at {f.file}:{f.line})" if f.file else " (no source line)"
        else:
            continue
        out.append(types.Diagnostic(
            range=rng, message=f"{f.tool}: {f.summary}{where}", source=SOURCE, code=f.kind,
            severity=types.DiagnosticSeverity.Error if f.blocking
            else types.DiagnosticSeverity.Warning))
    return out


class SanitizerChecks:
    """The session's compute-sanitizer checks: one at a time, in a background thread, with
    their results kept per document and kernel. Registers its diagnostics provider with
    ``diagnostics`` (and publishes through it); tells the editor through ``notifier``; reads
    ``snapshot(uri)`` (an open document's current analysis), ``settings()`` and gets the
    runner connection of those settings from ``client(settings)`` (the optimize queue's)."""

    def __init__(self, notifier: "Notifier", diagnostics: "Diagnostics", *,
                 snapshot: Callable[[str], Optional[DocumentSnapshot]],
                 settings: Callable[[], "Settings"], client: Callable[["Settings"], Any]):
        self.notifier = notifier
        self._diagnostics = diagnostics
        self._snapshot = snapshot
        self._settings = settings
        self._client = client
        self._bg = Background(notifier, "sanitize",
                              Words("check", "checked", "checking", types.MessageType.Warning),
                              log)
        self._results: dict[str, dict[str, Checked]] = {}
        self._running: set[tuple[str, str]] = set()
        diagnostics.providers.append(self.diagnostics)

    def diagnostics(self, snapshot: DocumentSnapshot) -> list[types.Diagnostic]:
        out = []
        for name, checked in self._results.get(snapshot.uri, {}).items():
            if checked.text != snapshot.text:
                continue
            view = next((v for v in snapshot.kernels if v.name == name), None)
            out += diagnostics_for(snapshot, checked, view)
        return out

    async def start(self, args: KernelArgs) -> dict[str, Any]:
        """Starts a check of ``args``' kernel; the answer says whether it started."""
        snapshot = self._snapshot(args.uri)
        try:
            snapshot, view = open_kernel(snapshot, args)
            target = snapshot.target(view)
        except KeyError as exc:
            return self._bg.refuse(str(exc.args[0]))
        except CudalensError as exc:
            return self._bg.refuse(f"{args.kernel} has no usable spec: {exc}")
        key = (snapshot.uri, view.name)
        if key in self._running:
            return self._bg.refuse(f"{view.name} is being checked already")
        token = self._bg.token()
        self._running.add(key)
        await self.notifier.progress_begin(
            token, f"Check {view.name} with compute-sanitizer",
            "memcheck, racecheck, initcheck, synccheck")
        asyncio.ensure_future(self._run(snapshot, view.name, target, token))
        return {"ok": True, "token": token}

    async def _run(self, snapshot: DocumentSnapshot, name: str, target, token: str) -> None:
        settings = self._settings()

        def work():  # in the thread: making the connection may start a local runner
            client = self._client(settings)  # the optimize jobs' connection
            return sanitize_target(target, client)

        ok, run = await self._bg.run(token, name, work,
                                     after=lambda: self._running.discard((snapshot.uri, name)))
        if not ok:
            return
        found = run.found
        self._results.setdefault(snapshot.uri, {})[name] = Checked(name, snapshot.text, found)
        self._diagnostics.publish(snapshot.uri)
        blocking = sum(1 for loc in found if loc.finding.blocking)
        if not found:
            end = f"{name}: compute-sanitizer found no races or memory errors on {run.where()}"
        else:
            end = (f"{name}: {len(found)} finding{'s' if len(found) != 1 else ''} "
                   f"({blocking} error{'s' if blocking != 1 else ''}), shown as diagnostics")
        self.notifier.progress_end(token, end)

    def record(self, snapshot: DocumentSnapshot, name: str, found: tuple[Located, ...]) -> None:
        """Keeps findings made elsewhere (the check before an optimize job) for ``snapshot``'s
        text and publishes them."""
        if self._bg.closed:
            return
        self._results.setdefault(snapshot.uri, {})[name] = Checked(name, snapshot.text, found)
        self._diagnostics.publish(snapshot.uri)

    def forget(self, uri: str) -> None:
        self._results.pop(uri, None)

    def shutdown(self) -> None:
        self._bg.shutdown()
