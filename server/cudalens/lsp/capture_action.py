"""The editor's capture: "Capture a real launch" above each kernel, its captures, and Optimize
on them.

Lenses (``lenses``), on each kernel's first line after the others:

* ``Capture a real launch`` runs the command ``cudalens.captureLaunch`` (argument as every
  kernel command: ``{"uri", "kernel", "version"}``);
* once the kernel has captures under ``<workspace>/.cudalens/captures``: ``1 capture`` /
  ``3 captures (1 stale)`` (``capture.index.captures_of``: stale ones were made of another
  version of the kernel); where the client can show documents, clicking opens the newest
  current capture's drafted spec.

The command answers at once (``{"ok": true, "token": ...}``) and runs the configured program
(``capture_command``: the ``cudalens.capture.command`` setting, else ``[capture] command`` of
the project file, which counts only in a trusted workspace since it is a program from the
checkout) through ``capture.session.capture_program`` in the workspace folder, in a
background thread, one capture at a time, with a work-done progress (``cudalens/capture/N``)
showing the program's last stderr line. Cancelling the progress ends the program's whole
process group (``capture.program``); nothing is saved. When it finishes, the spec drafted
from the capture (``capture.draft``: the kernel's spec with the captured sizes, scalars,
block and shared memory; every line still guessed marked ``# GUESS``) is written beside the
manifest (``NAME-launchN.spec``) and shown (``window/showDocument``, without taking focus: the
VS Code extension opens it beside the kernel). Without a command the answer says what to set.

The captures are handed the session's ``Notifier`` (``lsp/notifier.py``) and the few functions
and values they read (an open document's current analysis, the settings, the workspace
folders), not the session (docs/architecture.md, "No cycles").

Optimize (``replay_for``, called by the optimize job): when the kernel has a current capture,
the newest is replayed as ``cudalens optimize --capture`` does (``capture.replay``: the
captured launch is the timed case, the spec's sizes passed as scalars take the captured
values); stale captures are never used, and the job's progress says so.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from lsprotocol import types

from cudalens.errors import CudalensError
from cudalens.lsp import commands as cmd
from cudalens.lsp.background import Background, Words, open_kernel
from cudalens.lsp.commands import KernelArgs
from cudalens.lsp.documents import DocumentSnapshot, KernelView, path_to_uri

if TYPE_CHECKING:
    from cudalens.lsp.config import Settings
    from cudalens.lsp.notifier import Notifier

log = logging.getLogger(__name__)

CAPTURE = "cudalens.captureLaunch"
TITLE = "Capture a real launch"
SETTING = "cudalens.capture.command"
REPORT_EVERY_S = 0.25  # at most this often a stderr line goes to the progress


class NoCommand(CudalensError):
    """No capture command is configured (or only an untrusted project file names one)."""


# -- where captures live and which command runs ---------------------------------------------

def workspace_root(roots: Sequence[Path], path: Path) -> Path:
    """The innermost of the workspace folders ``roots`` holding ``path``, else ``path``'s
    folder."""
    holding = [r for r in roots if r == path or r in path.parents]
    return max(holding, key=lambda r: len(r.parts)) if holding else path.parent


def captures_dir(root: Path) -> Path:
    from cudalens.capture.session import DEFAULT_DIR

    return root / DEFAULT_DIR


@dataclass(frozen=True)
class CaptureCommand:
    argv: tuple[str, ...]
    origin: str  # "the cudalens.capture.command setting" or "FILE [capture]"


def capture_command(settings, path: Path) -> CaptureCommand:
    """The command to capture with for the kernel file ``path`` (module doc).

    Raises:
        NoCommand: none is set; the message says what to set (and why a project file's
            command was not taken).
    """
    if settings.capture_command:
        return CaptureCommand(tuple(settings.capture_command), f"the {SETTING} setting")
    found = _project_command(settings, path)
    if isinstance(found, CaptureCommand):
        return found
    raise NoCommand(
        f"no capture command is set: set {SETTING} to the program that launches the kernel "
        f"(a string such as \"python train.py\", or a list of arguments; it runs in the "
        f"workspace folder), or command = \"...\" under [capture] in cudalens.toml"
        + (f"; {found}" if found else ""))


def _project_command(settings, path: Path):
    """The project file's ``[capture] command`` as a ``CaptureCommand``, or the reason it was
    not taken ("" when there is none)."""
    import shlex

    from cudalens.agent import trust
    from cudalens.agent.config import ConfigError
    from cudalens.agent.config_file import (PYPROJECT, _read_toml, find_project_file,
                                            read_user_file)

    try:
        found = find_project_file(path, settings.workspace_roots)
        if found is None:
            return ""
        data = _read_toml(found)
    except ConfigError as exc:
        return str(exc)
    keys = ("tool", "cudalens", "capture") if found.name == PYPROJECT else ("capture",)
    node: Any = data
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    where = f"{found} [{'.'.join(keys)}]"
    value = node.get("command") if isinstance(node, dict) else None
    if value is None:
        return ""
    if isinstance(value, str):
        try:
            argv = tuple(shlex.split(value))
        except ValueError:
            argv = ()
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        argv = tuple(value)
    else:
        argv = ()
    if not argv:
        return (f"{where} command: expected a command line (a string or a list of strings), "
                f"found {value!r}")
    trusted = settings.workspace_trusted
    if not trusted:
        try:
            trusted = trust.trusted_folder(found.resolve().parent,
                                           read_user_file().trusted_folders) is not None
        except ConfigError:
            trusted = False
    if not trusted:
        return (f"{where} names command = {value!r}, but a project file comes with the "
                f"checkout and runs only in a trusted workspace (trust the workspace, or set "
                f"{SETTING} yourself)")
    return CaptureCommand(argv, where)


# -- lenses ---------------------------------------------------------------------------------

class _Manifests:
    """Manifests under a captures folder, read again only when a file's mtime changes."""

    def __init__(self) -> None:
        self._seen: dict[Path, tuple[int, Any]] = {}

    def all(self, base: Path) -> list[tuple[Path, Any]]:
        from cudalens.capture.container import CaptureFileError, read_manifest

        out = []
        if not base.is_dir():
            return out
        for path in sorted(base.glob("*/*.json")):
            try:
                mtime = path.stat().st_mtime_ns
            except OSError:
                continue
            memo = self._seen.get(path)
            if memo is None or memo[0] != mtime:
                try:
                    memo = (mtime, read_manifest(path))
                except CaptureFileError:
                    memo = (mtime, None)
                self._seen[path] = memo
            if memo[1] is not None:
                out.append((path, memo[1]))
        return out


_MANIFESTS = _Manifests()


@dataclass(frozen=True)
class Listed:
    path: Path
    stale: bool
    mtime: float


def listed(root: Path, snapshot: DocumentSnapshot, view: KernelView) -> list[Listed]:
    """The captures of ``view``'s kernel under ``root``, current ones first, newest first."""
    from cudalens.capture.sources import capture_key, matches

    found = [(p, m) for p, m in _MANIFESTS.all(captures_dir(root))
             if matches(view.kernel, m.kernel)]
    if not found:
        return []
    key = capture_key(snapshot.source, view.kernel)
    out = []
    for p, m in found:
        try:
            mtime = p.stat().st_mtime
        except OSError:
            continue
        out.append(Listed(p, m.source_key != key, mtime))
    return sorted(out, key=lambda e: (e.stale, -e.mtime, str(e.path)))


def count_title(entries: list[Listed]) -> str:
    """``1 capture``, ``3 captures (1 stale)``, ``2 captures (stale)``."""
    n = len(entries)
    stale = sum(e.stale for e in entries)
    title = f"{n} capture{'s' if n != 1 else ''}"
    if stale == n:
        return title + " (stale)"
    return title + (f" ({stale} stale)" if stale else "")


def lenses(snapshot: DocumentSnapshot, roots: Sequence[Path],
           show: bool) -> list[types.CodeLens]:
    """The capture lenses of ``snapshot`` (module doc) in the workspace folders ``roots``;
    ``show``: the client can show documents (the count lens then opens the drafted spec)."""
    from cudalens.capture.draft import DRAFT_SUFFIX

    root = workspace_root(roots, snapshot.path)
    out = []
    for view in snapshot.kernels:
        line = snapshot.index.range(view.kernel.range).start.line
        rng = types.Range(types.Position(line, 0), types.Position(line, 0))
        args = KernelArgs(uri=snapshot.uri, kernel=view.name, version=snapshot.version)
        out.append(types.CodeLens(range=rng, command=cmd.command(TITLE, CAPTURE, args)))
        entries = listed(root, snapshot, view)
        if not entries:
            continue
        title = count_title(entries)
        draft = entries[0].path.with_suffix(DRAFT_SUFFIX)
        if show and not entries[0].stale and draft.is_file():
            command = types.Command(title=title, command=cmd.OPEN_SPEC,
                                    arguments=[{"uri": path_to_uri(draft)}])
        else:
            command = types.Command(title=title, command="")
        out.append(types.CodeLens(range=rng, command=command))
    return out


# -- the capture run ------------------------------------------------------------------------

@dataclass
class _Running:
    token: str
    kernel: str
    cancel: threading.Event


class Captures:
    """The session's captures: one at a time, in a background thread. Tells the editor through
    ``notifier``; reads ``snapshot(uri)`` (an open document's current analysis, None when
    closed), ``settings()`` and the workspace folders ``roots``."""

    def __init__(self, notifier: "Notifier", *,
                 snapshot: Callable[[str], Optional[DocumentSnapshot]],
                 settings: Callable[[], "Settings"], roots: Sequence[Path]):
        self.notifier = notifier
        self._snapshot = snapshot
        self._settings = settings
        self._roots = tuple(roots)
        self._bg = Background(notifier, "capture",
                              Words("capture", "captured", "capturing", types.MessageType.Error),
                              log)
        self.running: Optional[_Running] = None

    async def start(self, args: KernelArgs) -> dict[str, Any]:
        """Starts capturing ``args``' kernel; the answer says whether it started and why not."""
        snapshot = self._snapshot(args.uri)
        try:
            snapshot, view = open_kernel(snapshot, args)
        except KeyError as exc:
            return self._bg.refuse(str(exc.args[0]))
        try:
            command = capture_command(self._settings(), snapshot.path)
        except NoCommand as exc:
            self.notifier.show_message(f"cudalens: cannot capture {view.name}: {exc}",
                                       types.MessageType.Error)
            return {"ok": False, "reason": str(exc)}
        if self.running is not None:
            return self._bg.refuse(f"a capture of {self.running.kernel} is running; wait for "
                                   f"it or cancel it")
        token = self._bg.token()
        running = self.running = _Running(token, view.name, threading.Event())
        shown = " ".join(command.argv)
        await self.notifier.progress_begin(token, f"Capture a launch of {view.name}",
                                           f"running {shown}")
        asyncio.ensure_future(self._run(snapshot, view, command, running))
        return {"ok": True, "token": token, "command": list(command.argv),
                "origin": command.origin}

    def cancel(self, token: str) -> bool:
        """Cancels the capture with progress ``token``; False when it is not a capture's."""
        running = self.running
        if running is None or running.token != token:
            return False
        running.cancel.set()
        self.notifier.progress_report(token, "cancelling: stopping the program", None)
        return True

    async def _run(self, snapshot: DocumentSnapshot, view: KernelView,
                   command: CaptureCommand, running: _Running) -> None:
        from cudalens.capture.program import ProgramCancelled
        from cudalens.capture.session import capture_program

        loop = asyncio.get_running_loop()
        root = workspace_root(self._roots, snapshot.path)
        settings = self._settings()
        last = [0.0]

        def echo(line: str) -> None:
            now = time.monotonic()
            text = line.strip()
            if text and now - last[0] >= REPORT_EVERY_S:
                last[0] = now
                loop.call_soon_threadsafe(self.notifier.progress_report, running.token,
                                          f"{command.argv[0]}: {text[:200]}", None)

        def work():
            return capture_program(list(command.argv), [view.name], out_dir=captures_dir(root),
                                   workspace=root, nvcc=settings.nvcc, echo=echo, cwd=root,
                                   cancel=running.cancel)

        def after() -> None:
            if self.running is running:
                self.running = None

        token, name = running.token, view.name
        ok, outcome = await self._bg.run(
            token, name, work, after=after, cancelled=(ProgramCancelled,),
            cancelled_end=f"{name}: capture cancelled; the program was stopped and nothing "
                          f"was saved")
        if ok:
            await self._finished(snapshot, view, outcome, token)

    async def _finished(self, snapshot: DocumentSnapshot, view: KernelView, outcome,
                        token: str) -> None:
        name = view.name
        for note in outcome.notes:
            self.notifier.log_message(f"cudalens: capture: {note}")
        if outcome.program_failed:
            tail = "\n".join(outcome.stderr_tail[-5:]) or "(nothing)"
            self.notifier.show_message(
                f"cudalens: {name} was not captured: the program failed with exit status "
                f"{outcome.status}; nothing was saved. The end of its stderr:\n{tail}",
                types.MessageType.Error)
            self.notifier.progress_end(token, f"{name}: not captured (the program failed "
                                              f"with exit status {outcome.status})")
            return
        if not outcome.written:
            reason = "; ".join(m.reason for m in outcome.missing) or "nothing was recorded"
            self.notifier.show_message(f"cudalens: {name} was not captured: {reason}",
                                       types.MessageType.Warning)
            self.notifier.progress_end(token, f"{name}: not captured")
            return
        manifest = outcome.written[0]
        draft, why = self._draft(snapshot, view, manifest)
        end = f"{name}: captured {manifest.name}; Optimize replays it"
        if draft is not None:
            end += f"; drafted spec {draft.name}"
            await self._show(draft)
        elif why:
            end += f" (no spec drafted: {why})"
        self.notifier.refresh()
        self.notifier.progress_end(token, end)

    def _draft(self, snapshot: DocumentSnapshot, view: KernelView,
               manifest: Path) -> tuple[Optional[Path], str]:
        from cudalens.capture.container import read_capture
        from cudalens.capture.draft import draft_from_capture, draft_path
        from cudalens.spec.writer import format_spec

        if view.spec is None:
            return None, view.spec_error
        try:
            capture = read_capture(manifest)
            spec = draft_from_capture(view.spec, capture, view.spec_origin)
            path = draft_path(capture)
            path.write_text(format_spec(spec), encoding="utf-8")
        except (CudalensError, OSError) as exc:
            log.warning("drafting a spec from %s failed: %s", manifest, exc)
            return None, str(exc)
        return path, ""

    async def _show(self, path: Path) -> None:
        await self.notifier.show_document(path_to_uri(path))  # the draft is on disk either way

    def shutdown(self) -> None:
        self._bg.shutdown()
        if self.running is not None:
            self.running.cancel.set()


# -- Optimize on a capture ------------------------------------------------------------------

def replay_for(roots: Sequence[Path], snapshot: DocumentSnapshot, view: KernelView, target,
               proposer: str, report: Callable[[str, Optional[int]], None]):
    """``(target, replay)`` for an optimize job of ``view``: with the newest current capture of
    the kernel, the target with the capture-bound spec and its ``Replay``; else ``(target,
    None)``. Says on the job's progress which capture is replayed, or why none is (only stale
    ones, the LLM proposer, an unreadable capture). Captures are looked for under the
    innermost of the workspace folders ``roots`` holding the document."""
    from cudalens.capture.replay import load_replay

    entries = listed(workspace_root(roots, snapshot.path), snapshot, view)
    if not entries:
        return target, None
    current = [e for e in entries if not e.stale]
    stale = len(entries) - len(current)
    if not current:
        report(f"{stale} stale capture{'s' if stale != 1 else ''} of {view.name} not used (the "
               f"kernel changed since); the spec's cases are timed", None)
        return target, None
    if proposer == "llm":
        report(f"a capture of {view.name} exists, but the LLM proposer does not replay "
               f"captures; the spec's cases are timed", None)
        return target, None
    try:
        replay = load_replay(current[0].path, target)
    except CudalensError as exc:
        report(f"the capture {current[0].path.name} is not used: {exc}", None)
        return target, None
    m = replay.capture.manifest
    sizes = "; ".join(replay.notes[:3])
    report(f"replaying capture {current[0].path.name}: launch {m.launch_index}, grid "
           f"{tuple(m.grid)}, block {tuple(m.block)}" + (f"; {sizes}" if sizes else ""), None)
    return replace(target, spec=replay.spec), replay
