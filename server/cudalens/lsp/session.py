"""The server's state for one client connection: settings, open CUDA documents, the results
store, the optimization queue, diagnostics and the file watcher.

Everything here runs on the server's event loop; the slow parts (nvcc, optimization) run in
executors on immutable ``DocumentSnapshot``s and come back to the loop with their results.
This is the only state besides the pygls server itself; it lives on the server instance.

The session owns its parts; they do not know it. The diagnostics and the optimize queue get
the session's ``notifier`` (``lsp/notifier.py``: progress, messages, refresh) and the few
functions they read through (the settings, the current snapshot of a document, the kernels'
statuses, where a finished run goes), so no call or import leads from them back here
(docs/architecture.md, "No cycles").
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from gpu_runner.report import DeviceInfo
from cudalens.check.nvcc import stop_all as stop_nvcc_checks
from cudalens.lsp import config, editing
from cudalens.lsp.config import Settings
from cudalens.lsp.diagnostics import Diagnostics
from cudalens.lsp.documents import (MAX_ANALYZED_BYTES, DocumentSnapshot, KernelView,
                                    SpecCache, analyze, is_cuda_path, oversized, path_to_uri,
                                    uri_to_path)
from cudalens.lsp.edits import SpecFile
from cudalens.lsp.jobs import Job, Jobs, RunnerFactory
from cudalens.lsp.notifier import ClientNotifier, supports
from cudalens.lsp.results import KernelStatus, kernel_statuses
from cudalens.lsp.watcher import Watcher
from cudalens.source.incremental import IncrementalParser
from cudalens.store.keys import device_id
from cudalens.store.records import RunRecord
from cudalens.store.sqlite import ResultsStore, StoreError
from cudalens.textfile import TextFileError, read_text_file

log = logging.getLogger(__name__)

STORE_DIR = ".cudalens"
STORE_FILE = "results.db"


class Session:
    def __init__(self, server: LanguageServer, runner_factory: RunnerFactory,
                 roots: list[Path]):
        self.server = server
        self.roots = roots
        self.notifier = ClientNotifier(server, republish=self._publish_all)
        self.settings = Settings(workspace_roots=tuple(roots))
        self._settings_epoch = 0
        self.store = self._open_store()
        self.check_executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="cudalens-check")
        self.diagnostics = Diagnostics(
            self.notifier, server.text_document_publish_diagnostics,
            settings=lambda: self.settings, snapshot=self.snapshot, statuses=self.statuses,
            executor=self.check_executor)
        self.jobs = Jobs(self.notifier, runner_factory, settings=lambda: self.settings,
                         snapshot=self.snapshot, stored=self.record_run,
                         device_seen=self.device_seen, checked=self.diagnostics.check_for)
        self.watcher = Watcher(roots, self.files_changed)
        self._snapshots: dict[str, tuple[int, DocumentSnapshot]] = {}
        self.specs = SpecCache()
        self._parsers: dict[str, IncrementalParser] = {}  # per open document
        # per open document: the newest snapshot that was not a mid-edit regression
        self._last_good: dict[str, DocumentSnapshot] = {}
        self._generation = 0  # bumped when files on disk (specs, headers) change
        self._too_large: set[str] = set()  # open documents above MAX_ANALYZED_BYTES

    # -- setup -----------------------------------------------------------------------------

    def _open_store(self) -> ResultsStore:
        if not self.roots:
            log.info("no workspace folder: results are kept in memory only")
            return ResultsStore(":memory:")
        path = self.roots[0] / STORE_DIR / STORE_FILE
        try:
            return ResultsStore(path)
        except StoreError as exc:
            self.notifier.show_message(
                f"cudalens: {exc}; results are kept in memory only this session",
                types.MessageType.Warning)
            return ResultsStore(":memory:")

    @property
    def state_dir(self) -> Optional[Path]:
        return self.roots[0] / STORE_DIR if self.roots else None

    def shutdown(self) -> None:
        self.watcher.stop()
        self.jobs.shutdown()
        self.check_executor.shutdown(wait=False, cancel_futures=True)
        stopped = stop_nvcc_checks()  # a running check's nvcc, with cicc and ptxas
        if stopped:
            log.info("shutdown: stopped %d running nvcc check(s)", stopped)
        self.store.close()

    # -- configuration ---------------------------------------------------------------------

    async def load_settings(self, raw: Any = None) -> None:
        """Takes the client's settings: ``raw`` when it pushed them, else asks for them with
        ``workspace/configuration`` (when it supports that). Rejected values are reported
        and their defaults kept. A new runner address or token drops the runner connection;
        new compile-check settings re-check the open documents. When a newer call starts
        while this one waits for the client, this one's answer is dropped."""
        self._settings_epoch += 1
        epoch = self._settings_epoch
        if raw is None and self.supports("workspace", "configuration"):
            try:
                raw = await config.pull(self.server)
            except Exception as exc:  # noqa: BLE001 - a client error must not stop the server
                log.warning("workspace/configuration failed: %s", exc)
            if epoch != self._settings_epoch:
                return
        settings, problems = config.parse_settings(raw, tuple(self.roots))
        for problem in problems:
            self.notifier.show_message(f"cudalens settings: {problem}", types.MessageType.Warning)
        old, self.settings = self.settings, settings
        if old.runner_identity() != settings.runner_identity():
            self.jobs.forget_clients()
        check = ("check_enabled", "arch", "nvcc", "nvcc_options")
        if any(getattr(old, f) != getattr(settings, f) for f in check):
            for uri in self.open_uris():
                self.diagnostics.schedule(uri, delay_ms=0)
        log.info("settings: %r", settings)
        self.notifier.refresh()

    # -- capabilities ----------------------------------------------------------------------

    def supports(self, *path: str) -> bool:
        """Whether the client's capabilities set ``path`` (``"window", "work_done_progress"``)."""
        return supports(self.server, *path)

    # -- documents -------------------------------------------------------------------------

    def is_open(self, uri: str) -> bool:
        return unquote(uri) in self.server.workspace.text_documents

    def snapshot(self, uri: str) -> Optional[DocumentSnapshot]:
        """The analyzed current text of the open CUDA document ``uri`` (None otherwise)."""
        if not self.is_open(uri):
            return None
        doc = self.server.workspace.get_text_document(uri)
        path = uri_to_path(uri)
        if path is None or not is_cuda_path(path):
            return None
        memo = self._snapshots.get(uri)
        if memo is not None and memo[0] == self._generation and memo[1].version == doc.version \
                and memo[1].text == doc.source:
            return memo[1]
        size = oversized(doc.source)
        if size is not None:
            self._skip_too_large(uri, path, size)
            return None
        self._too_large.discard(uri)
        encoding = self.server.workspace.position_encoding or "utf-16"
        parser = self._parsers.get(uri)
        if parser is None:
            parser = self._parsers[uri] = IncrementalParser()
        snap = analyze(uri, path, doc.version, doc.source,
                       str(getattr(encoding, "value", encoding)), self.specs, parser)
        self._snapshots[uri] = (self._generation, snap)
        if not editing.is_regression(self._last_good.get(uri), snap):
            self._last_good[uri] = snap
        return snap

    def _skip_too_large(self, uri: str, path: Path, size: int) -> None:
        """A document above the size limit is not analyzed (analysis runs on the event loop,
        about a second per megabyte: it would hold up every other document); said once each
        time it crosses the limit, and what was shown for it is cleared."""
        if uri in self._too_large:
            return
        self._too_large.add(uri)
        self._snapshots.pop(uri, None)
        self._parsers.pop(uri, None)
        self._last_good.pop(uri, None)
        self.diagnostics.forget(uri)
        self.notifier.show_message(
            f"cudalens: {path.name} is {size / 1e6:.1f} MB; documents above "
            f"{MAX_ANALYZED_BYTES / 1e6:.0f} MB are not analyzed (no code lenses, "
            "hints, hover or compile check)", types.MessageType.Warning)

    def held(self, snapshot: DocumentSnapshot) -> Optional[editing.Held]:
        """The kernels of the last good analysis that ``snapshot`` (a mid-edit parse with
        syntax errors) lost, if any (``editing``)."""
        return editing.held(self._last_good.get(snapshot.uri), snapshot)

    def open_uris(self) -> list[str]:
        return [uri for uri in list(self.server.workspace.text_documents)
                if (p := uri_to_path(uri)) is not None and is_cuda_path(p)]

    def opened(self, uri: str) -> None:
        if self.snapshot(uri) is not None:
            self.diagnostics.schedule(uri, delay_ms=0)

    def changed(self, uri: str) -> None:
        if self.snapshot(uri) is not None:
            self.diagnostics.schedule(uri)

    def closed(self, uri: str) -> None:
        self._too_large.discard(uri)
        self._snapshots.pop(uri, None)
        self._parsers.pop(uri, None)
        self._last_good.pop(uri, None)
        self.diagnostics.forget(uri)

    def files_changed(self, paths: set[str]) -> None:
        """Files changed on disk (the watcher): specs and headers change what open documents
        mean, so every open document is analyzed again, re-checked and refreshed."""
        log.info("changed on disk: %s", ", ".join(sorted(paths)))
        self._generation += 1
        for uri in self.open_uris():
            self.diagnostics.schedule(uri, delay_ms=0)
        self.notifier.refresh()

    def spec_file(self, path: str) -> Optional[SpecFile]:
        """A spec file's text (the editor's, when open there) and version; None when absent."""
        uri = path_to_uri(Path(path))
        if self.is_open(uri):
            doc = self.server.workspace.get_text_document(uri)
            return SpecFile(uri=uri, text=doc.source, version=doc.version)
        if not Path(path).exists():
            return None
        try:  # bytes that are not UTF-8 kept as they are (``textfile``)
            text = read_text_file(Path(path))
        except TextFileError as exc:
            log.warning("cannot read %s: %s", path, exc)
            return None
        return SpecFile(uri=uri, text=text, version=None)

    def spec_file_of(self, view: KernelView) -> Optional[SpecFile]:
        if view.spec is None or view.spec_origin in ("", "inferred"):
            return None
        return self.spec_file(view.spec_origin)

    # -- results ---------------------------------------------------------------------------

    @property
    def device(self) -> Optional[str]:
        """The device id of the configured runner, as last seen (kept in the store)."""
        return self.store.get_fact(f"device:{self.settings.runner_url}")

    def device_seen(self, settings: Settings, device: DeviceInfo) -> None:
        ident = device_id(device)
        name = f"device:{settings.runner_url}"
        if self.store.get_fact(name) != ident:
            self.store.set_fact(name, ident)
            self.notifier.refresh()

    def statuses(self, snapshot: DocumentSnapshot) -> list[KernelStatus]:
        return kernel_statuses(snapshot, self.store, self.device)

    def status(self, snapshot: DocumentSnapshot, kernel: str) -> KernelStatus:
        """The status of ``kernel`` (plain or qualified name).

        Raises:
            KeyError: no such kernel in the document (the message lists them).
        """
        view = snapshot.kernel(kernel)
        return next(s for s in self.statuses(snapshot) if s.view is view)

    def jobs_of(self, uri: str) -> dict[str, Job]:
        snap = self._snapshots.get(uri)
        names = [v.name for v in snap[1].kernels] if snap else []
        found = {}
        for name in names:
            job = self.jobs.active(uri, name)
            if job is not None:
                found[name] = job
        return found

    def record_run(self, record: RunRecord, job: Job) -> None:
        """Keeps a finished job's run (the queue's ``stored``) and says so to the client."""
        self.store.put_run(record)
        self.notifier.refresh()
        self.notifier.run_stored(job.snapshot.uri, job.view.name, record.key)

    def _publish_all(self) -> None:
        """The diagnostics of every open document, published (the notifier's refresh)."""
        for uri in self.open_uris():
            self.diagnostics.publish(uri)


def workspace_roots(params: types.InitializeParams) -> list[Path]:
    """The workspace folders of ``initialize`` (else its root URI or path), as paths."""
    roots: list[Path] = []
    for folder in params.workspace_folders or []:
        p = uri_to_path(folder.uri)
        if p is not None:
            roots.append(p)
    if not roots and params.root_uri:
        p = uri_to_path(params.root_uri)
        if p is not None:
            roots.append(p)
    if not roots and params.root_path:
        roots.append(Path(os.path.abspath(params.root_path)))
    return roots
