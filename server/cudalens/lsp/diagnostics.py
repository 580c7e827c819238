"""Diagnostics: nvcc's messages, ptxas resource notes, spec problems and results, per document.

Three sources are merged into one ``textDocument/publishDiagnostics`` per document:

* **compile** (no GPU needed): ``cudalens.check.compile_check`` on the editor's text, run in
  a background thread after ``debounce_ms`` of quiet following an edit (and when a header or
  spec changes on disk). Errors and warnings go to their lines (1-based lines and character
  columns from the compiler, converted to the client's encoding); a message located in an
  included header goes on the ``#include`` line that brings it in. ptxas errors about a
  kernel without a line, and every kernel's resource report (registers, stack frame,
  spills), go on the kernel's name: a Warning when it spills, Information when it has a stack
  frame, a Hint otherwise. A check whose document moved on before it finished is dropped.
* **spec**: a kernel whose spec file is malformed or does not fit it (Warning, on its name).
* **results**: with current results, an Information diagnostic on the kernel's name with the
  verified speedup; with only stale results, a Warning saying so.

More sources register a provider in ``Diagnostics.providers`` (``provider(snapshot)`` gives its
diagnostics for that text), merged into the same publish: compute-sanitizer's findings
(``sanitize_action``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from pathlib import Path
from concurrent.futures import Executor
from typing import Callable, Optional

from lsprotocol import types

from cudalens.check import CheckError, CheckResult, compile_check
from cudalens.check.nvcc import NvccStopped, stop_tagged, tagged
from cudalens.check.render import format_kernel
from cudalens.check.report import Diagnostic as CheckDiagnostic
from cudalens.lsp.config import Settings
from cudalens.lsp.documents import DocumentSnapshot, KernelView, path_to_uri
from cudalens.lsp.notifier import Notifier
from cudalens.lsp.results import KernelStatus
from cudalens.lsp.wording import measurement, no_offer, speedup_ci, stale_note

log = logging.getLogger(__name__)

SOURCE_NVCC = "nvcc"
SOURCE_CUDALENS = "cudalens"

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "remark": types.DiagnosticSeverity.Information,
    "note": types.DiagnosticSeverity.Hint,
}


def _same_path(a: str, b: Path) -> bool:
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(str(b))


def _kernel_for_function(snapshot: DocumentSnapshot, function: str) -> Optional[KernelView]:
    base = function.split("<", 1)[0]
    for view in snapshot.kernels:
        if base in (view.kernel.name, view.kernel.qualified_name):
            return view
    return None


def compile_diagnostics(snapshot: DocumentSnapshot, result: CheckResult) -> list[types.Diagnostic]:
    """LSP diagnostics for ``snapshot`` from a compile check of its text."""
    out: list[types.Diagnostic] = []
    for d in result.diagnostics:
        mapped = _map_compiler_message(snapshot, d)
        if mapped is not None:
            out.append(mapped)
    for res in result.kernels:
        view = _kernel_for_function(snapshot, res.name)
        if view is None:
            continue
        if res.spills:
            severity = types.DiagnosticSeverity.Warning
        elif res.stack_bytes > 0:
            severity = types.DiagnosticSeverity.Information
        else:
            severity = types.DiagnosticSeverity.Hint
        out.append(types.Diagnostic(
            range=snapshot.name_range(view), severity=severity, source="ptxas",
            message=f"{format_kernel(res)} ({res.arch})"))
    return out


def _map_compiler_message(snapshot: DocumentSnapshot,
                          d: CheckDiagnostic) -> Optional[types.Diagnostic]:
    severity = _SEVERITY.get(d.severity, types.DiagnosticSeverity.Information)
    message = d.message
    code = d.code
    index = snapshot.index
    related = []
    for note in d.notes:
        if note.path is not None and note.line is not None:
            related.append(types.DiagnosticRelatedInformation(
                location=types.Location(uri=path_to_uri(Path(os.path.abspath(note.path))),
                                        range=types.Range(types.Position(note.line - 1, 0),
                                                          types.Position(note.line - 1, 0))),
                message=note.message))
        else:
            message += f"\n{note.message}"
    if d.path is not None and d.line is not None and _same_path(d.path, snapshot.path):
        line = d.line - 1
        rng = index.token_range(line, d.column - 1) if d.column else index.line_range(line)
    elif d.path is not None and d.line is not None:
        # In another file (a header): place it on the line of this file that includes it.
        including = next((n for n in d.notes if n.path is not None and n.line is not None
                          and _same_path(n.path, snapshot.path)), None)
        line = including.line - 1 if including is not None else _include_line(snapshot, d.path)
        rng = index.line_range(line)
        message = f"{d.path}:{d.line}: {message}"
    elif d.function is not None and (view := _kernel_for_function(snapshot, d.function)):
        rng = snapshot.name_range(view)
    else:
        rng = index.line_range(0)
    return types.Diagnostic(range=rng, severity=severity, source=SOURCE_NVCC if d.tool != "ptxas"
                            else "ptxas", message=message, code=code,
                            related_information=related or None)


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def _include_line(snapshot: DocumentSnapshot, header: str) -> int:
    """The zero-based line of the ``#include`` in ``snapshot`` naming ``header`` (compared by
    file name, as the compiler resolved it against the include path); 0 when none does (the
    header comes in through another header)."""
    name = os.path.basename(header)
    for number, text in enumerate(snapshot.index.lines):
        m = _INCLUDE.match(text)
        if m and os.path.basename(m.group(1)) == name:
            return number
    return 0


def spec_diagnostics(snapshot: DocumentSnapshot) -> list[types.Diagnostic]:
    """A Warning on each kernel whose spec cannot be used, saying why."""
    return [types.Diagnostic(range=snapshot.name_range(v),
                             severity=types.DiagnosticSeverity.Warning, source=SOURCE_CUDALENS,
                             message=f"harness spec: {v.spec_error}")
            for v in snapshot.kernels if v.spec is None and v.spec_error]


def result_diagnostics(snapshot: DocumentSnapshot,
                       statuses: list[KernelStatus]) -> list[types.Diagnostic]:
    """Information with the verified speedup (current results) or a Warning (stale)."""
    out = []
    for st in statuses:
        rng = snapshot.name_range(st.view)
        if st.current is not None:
            run = st.current
            if st.offer is not None:
                c = st.offer
                text = (f"{st.view.kernel.name}: verified candidate {speedup_ci(c)} faster on "
                        f"{run.device.name}: {c.label}")
            elif run.derived_from and run.baseline is not None:
                text = (f"{st.view.kernel.name}: {measurement(run.baseline, run.device)} "
                        f"(measured as the applied candidate)")
            elif run.baseline is not None:
                text = (f"{st.view.kernel.name}: {measurement(run.baseline, run.device)}; "
                        f"{no_offer(run, len(st.rejected))}")
            else:
                text = f"{st.view.kernel.name}: the baseline was not timed"
            out.append(types.Diagnostic(range=rng, severity=types.DiagnosticSeverity.Information,
                                        source=SOURCE_CUDALENS, message=text))
        elif st.stale is not None:
            out.append(types.Diagnostic(range=rng, severity=types.DiagnosticSeverity.Warning,
                                        source=SOURCE_CUDALENS,
                                        message=f"{st.view.kernel.name}: {stale_note(st.stale)}"))
    return out


class Diagnostics:
    """Debounced compile checks and publishing, for one session. It reads nothing of the
    session but what it is given: ``publish(params)`` sends one
    ``textDocument/publishDiagnostics``; ``settings()`` the current settings; ``snapshot(uri)``
    the current analysis of an open document (None when closed or not CUDA); ``statuses``
    the kernels' result statuses of a snapshot; checks run on ``executor``. A check that
    cannot run is told once through ``notifier``."""

    def __init__(self, notifier: Notifier,
                 publish: Callable[[types.PublishDiagnosticsParams], None], *,
                 settings: Callable[[], Settings],
                 snapshot: Callable[[str], Optional[DocumentSnapshot]],
                 statuses: Callable[[DocumentSnapshot], list[KernelStatus]],
                 executor: Executor):
        self.notifier = notifier
        self._publish = publish
        self._settings = settings
        self._snapshot = snapshot
        self._statuses = statuses
        self._executor = executor
        self._compiled: dict[str, tuple[Optional[int], list[types.Diagnostic]]] = {}
        self._checks: dict[str, CheckResult] = {}
        self._pending: dict[str, asyncio.Task] = {}
        self._nvcc_problem_shown = False
        # uri -> the last (version, diagnostics) sent, so that an unchanged set is not sent
        # again (analysis, results and checks each ask for a publish)
        self._sent: dict[str, tuple[Optional[int], list[types.Diagnostic]]] = {}
        # more sources merged into each publish (e.g. sanitize_action's compute-sanitizer
        # findings): provider(snapshot) -> its diagnostics for that text
        self.providers: list[Callable[[DocumentSnapshot], list[types.Diagnostic]]] = []

    def schedule(self, uri: str, delay_ms: Optional[int] = None) -> None:
        """(Re)starts the quiet period before ``uri`` is compiled; publishes results now. A
        check of ``uri`` still compiling is stopped (nvcc with its children): its result
        would be dropped for the older version."""
        task = self._pending.pop(uri, None)
        if task is not None:
            task.cancel()
            if stop_tagged(uri):
                log.info("stopped the compile check of an older version of %s", uri)
        settings = self._settings()
        if settings.check_enabled:
            delay = settings.debounce_ms if delay_ms is None else delay_ms
            self._pending[uri] = asyncio.create_task(self._check_later(uri, delay / 1000.0))
        else:
            self._compiled.pop(uri, None)
        self.publish(uri)

    def forget(self, uri: str) -> None:
        task = self._pending.pop(uri, None)
        if task is not None:
            task.cancel()
            stop_tagged(uri)
        self._compiled.pop(uri, None)
        self._checks.pop(uri, None)
        self._sent.pop(uri, None)
        self._publish(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    async def _check_later(self, uri: str, delay_s: float) -> None:
        await asyncio.sleep(delay_s)
        snapshot = self._snapshot(uri)
        if snapshot is None:
            return
        settings = self._settings()
        loop = asyncio.get_running_loop()
        try:
            result = await loop.run_in_executor(
                self._executor, _run_check, snapshot, settings.arch,
                settings.nvcc_options, settings.nvcc)
        except NvccStopped:
            return  # superseded by an edit, or ended by shutdown: nothing to say
        except (CheckError, ValueError) as exc:
            if not self._nvcc_problem_shown:
                self._nvcc_problem_shown = True
                self.notifier.show_message(f"cudalens: compile diagnostics are off: {exc}",
                                           types.MessageType.Warning)
            return
        finally:
            if self._pending.get(uri) is asyncio.current_task():
                del self._pending[uri]
        current = self._snapshot(uri)
        if current is None or current.version != snapshot.version:
            return  # the document moved on; its own check is scheduled
        self._compiled[uri] = (snapshot.version, compile_diagnostics(snapshot, result))
        self._checks[uri] = result
        self.publish(uri)

    def publish(self, uri: str) -> None:
        """Sends ``uri``'s merged diagnostics for its current version."""
        snapshot = self._snapshot(uri)
        if snapshot is None:
            return
        # The last check's messages stay until the check of the new text replaces them (no
        # flicker while typing); they may point a few lines off in between, so while they are
        # for an older version the set is published without a version: it is not claimed to
        # describe the current text (a client may drop or shift unversioned diagnostics).
        compiled = self._compiled.get(uri)
        diags = list(compiled[1]) if compiled else []
        diags += spec_diagnostics(snapshot)
        diags += result_diagnostics(snapshot, self._statuses(snapshot))
        for provider in self.providers:
            diags += provider(snapshot)
        version = publish_version(compiled, snapshot.version)
        if self._sent.get(uri) == (version, diags):
            return
        self._sent[uri] = (version, diags)
        self._publish(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=diags, version=version))

    def last_check(self, uri: str) -> Optional[CheckResult]:
        """The last finished compile check of ``uri`` (for hover), if any."""
        return self._checks.get(uri)

    def check_for(self, uri: str, version: Optional[int]) -> Optional[CheckResult]:
        """The last finished compile check of ``uri`` when it was made for ``version`` (the
        optimize jobs' preflight uses it instead of compiling again), else None."""
        compiled = self._compiled.get(uri)
        if compiled is None or compiled[0] != version:
            return None
        return self._checks.get(uri)

    def pending(self, uri: str) -> bool:
        return uri in self._pending


def publish_version(compiled: Optional[tuple[Optional[int], list]],
                    current: Optional[int]) -> Optional[int]:
    """The version to tag a merged publish with: ``current`` when no compile diagnostics are
    in it or they were computed for ``current``; None when they are an older version's."""
    if compiled and compiled[1] and compiled[0] != current:
        return None
    return current


def _run_check(snapshot: DocumentSnapshot, arch: str, options, nvcc: str) -> CheckResult:
    """The check with the project's build flags (``cudalens.build``) before the settings'."""
    from cudalens.build import local_nvcc_options  # noqa: PLC0415
    from cudalens.errors import CudalensError  # noqa: PLC0415

    try:
        build = local_nvcc_options(snapshot.path)
    except CudalensError as exc:  # shown like an nvcc problem: the check cannot be like the build
        raise CheckError(str(exc)) from None
    with tagged(snapshot.uri):  # so that an edit can stop it (stop_tagged)
        return compile_check(str(snapshot.path), snapshot.text, arch=arch,
                             options=(*build, *options), nvcc=nvcc)
