"""What the language server's features tell the editor, and nothing else: work-done progress,
messages (shown, or only logged), a refresh of what it shows, that a run was stored, and a
document to show.

Features (the optimize queue ``jobs``, the compile diagnostics ``diagnostics``, the
compute-sanitizer checks, the captures ``capture_action``) are handed a ``Notifier`` instead of the whole ``Session``, so none
of them imports or calls back into the session (docs/architecture.md, "No cycles").
``ClientNotifier`` is the one on a pygls server; tests can pass any object with these methods.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional, Protocol

from lsprotocol import types

log = logging.getLogger(__name__)

RUN_STORED = "cudalens/runStored"  # notification {"uri", "kernel", "key"} (report_view)


class Notifier(Protocol):
    """The editor-facing side effects a feature may cause. Call on the server's event loop."""

    async def progress_begin(self, token: str, title: str, message: str) -> None:
        """Creates the work-done progress ``token`` (when the client supports progress) and
        begins it, cancellable, at 0%."""

    def progress_report(self, token: str, message: str, percent: Optional[int]) -> None:
        """Reports ``message`` (and ``percent``, 0-100, when known) on a begun token."""

    def progress_end(self, token: str, message: str) -> None:
        """Ends a begun token with ``message``; a token never begun is ignored."""

    def show_message(self, text: str, kind: types.MessageType = types.MessageType.Info) -> None:
        """Shows ``text`` to the user and writes it to the client's log."""

    def log_message(self, text: str, kind: types.MessageType = types.MessageType.Info) -> None:
        """Writes ``text`` to the client's log only (not shown)."""

    async def show_document(self, uri: str) -> None:
        """Asks the client to show ``uri`` without taking focus, where it can show documents;
        a client that refuses is logged, not raised."""

    def refresh(self) -> None:
        """Re-publishes every open document's diagnostics and asks the client to fetch code
        lenses and inlay hints again."""

    def run_stored(self, uri: str, kernel: str, key: str) -> None:
        """Tells the client a run of ``kernel`` in ``uri`` was stored under ``key``."""


def supports(server: Any, *path: str) -> bool:
    """Whether the client's capabilities set ``path`` (``"window", "work_done_progress"``)."""
    node = server.client_capabilities or types.ClientCapabilities()
    for part in path:
        node = getattr(node, part, None)
        if node is None:
            return False
    return bool(node)


class ClientNotifier:
    """The ``Notifier`` of a pygls ``LanguageServer``. ``republish`` publishes the diagnostics
    of every open document (the session's diagnostics; set after construction when those
    need this notifier themselves)."""

    def __init__(self, server: Any, republish: Callable[[], None] = lambda: None):
        self.server = server
        self.republish = republish

    async def progress_begin(self, token: str, title: str, message: str) -> None:
        if not supports(self.server, "window", "work_done_progress"):
            return
        try:
            await self.server.work_done_progress.create_async(token)
        except Exception as exc:  # noqa: BLE001 - the client refused: go on without progress
            log.warning("the client refused progress token %s: %s", token, exc)
            return
        self.server.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=title, message=message, cancellable=True, percentage=0))

    def progress_report(self, token: str, message: str, percent: Optional[int]) -> None:
        if token in self.server.work_done_progress.tokens:
            self.server.work_done_progress.report(token, types.WorkDoneProgressReport(
                message=message, percentage=percent, cancellable=True))

    def progress_end(self, token: str, message: str) -> None:
        if token in self.server.work_done_progress.tokens:
            self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
            del self.server.work_done_progress.tokens[token]

    def show_message(self, text: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.server.window_show_message(types.ShowMessageParams(type=kind, message=text))
        self.server.window_log_message(types.LogMessageParams(type=kind, message=text))

    def log_message(self, text: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.server.window_log_message(types.LogMessageParams(type=kind, message=text))

    async def show_document(self, uri: str) -> None:
        if not supports(self.server, "window", "show_document", "support"):
            return
        try:
            await self.server.window_show_document_async(
                types.ShowDocumentParams(uri=uri, take_focus=False))
        except Exception as exc:  # noqa: BLE001 - what was to be shown is on disk either way
            log.warning("the client did not show %s: %s", uri, exc)

    def refresh(self) -> None:
        self.republish()
        if supports(self.server, "workspace", "code_lens", "refresh_support"):
            self.server.workspace_code_lens_refresh(None)
        if supports(self.server, "workspace", "inlay_hint", "refresh_support"):
            self.server.workspace_inlay_hint_refresh(None)

    def run_stored(self, uri: str, kernel: str, key: str) -> None:
        self.server.protocol.notify(RUN_STORED, {"uri": uri, "kernel": kernel, "key": key})
