"""Watching the workspace for ``.cu``, ``.cuh`` and ``.spec`` files changed outside the editor.

A watchdog observer (its own thread) sees files written by ``git checkout``, another tool or
another editor. Events are handed to the event loop and coalesced for ``settle_s`` (a
checkout writes many files at once), then ``on_change(paths)`` runs on the loop with the set
of absolute paths created, changed, moved or deleted. Paths under ``.cudalens/``, ``.git/``
and virtual environments are ignored.

After ``stop`` nothing is delivered: the pending flush is cancelled, and events the observer
thread still hands over (it finishes its current batch after being told to stop) are dropped,
since ``on_change`` may use what the server closes at shutdown (the results store).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Callable, Optional

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

log = logging.getLogger(__name__)

WATCHED_SUFFIXES = (".cu", ".cuh", ".spec")
IGNORED_DIRS = (".cudalens", ".git", ".venv", "node_modules", "__pycache__")


def is_watched(path: str) -> bool:
    p = Path(path)
    return p.suffix in WATCHED_SUFFIXES and not any(part in IGNORED_DIRS for part in p.parts)


class _Handler(FileSystemEventHandler):
    def __init__(self, emit: Callable[[str], None]):
        self._emit = emit

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type in ("opened", "closed_no_write"):
            return
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if isinstance(path, bytes):
                path = path.decode("utf-8", errors="surrogateescape")
            if path and is_watched(path):
                self._emit(str(Path(path).resolve()))


class Watcher:
    """Watches ``roots`` recursively; call ``start`` on the event loop, ``stop`` at shutdown
    (on the same loop). A stopped watcher stays stopped: ``start`` after ``stop`` does nothing."""

    def __init__(self, roots: list[Path], on_change: Callable[[set[str]], None],
                 settle_s: float = 0.1):
        self.roots = roots
        self.on_change = on_change
        self.settle_s = settle_s
        self._observer: Optional[Observer] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._pending: set[str] = set()
        self._flush: Optional[asyncio.TimerHandle] = None
        self._stopped = False

    @property
    def stopped(self) -> bool:
        return self._stopped

    def start(self) -> None:
        if self._stopped:  # shut down before the client said "initialized"
            log.info("not watching: the server is shutting down")
            return
        self._loop = asyncio.get_running_loop()
        observer = Observer()
        handler = _Handler(self._from_thread)
        for root in self.roots:
            if root.is_dir():
                observer.schedule(handler, str(root), recursive=True)
        observer.daemon = True
        observer.start()
        self._observer = observer
        log.info("watching %s for .cu/.cuh/.spec changes", ", ".join(map(str, self.roots)))

    def stop(self) -> None:
        """Stops watching and drops what was not delivered yet (see the module doc)."""
        self._stopped = True
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        if self._pending:
            log.info("shutting down: not delivering %d changed path(s)", len(self._pending))
            self._pending = set()
        if self._observer is not None:
            self._observer.stop()
            self._observer = None

    def _from_thread(self, path: str) -> None:
        loop = self._loop
        if self._stopped or loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._add, path)
        except RuntimeError:  # the loop closed between the check and the call
            pass

    def _add(self, path: str) -> None:
        if self._stopped:
            return
        self._pending.add(path)
        if self._flush is None:
            self._flush = self._loop.call_later(self.settle_s, self._deliver)

    def _deliver(self) -> None:
        paths, self._pending, self._flush = self._pending, set(), None
        if paths and not self._stopped:
            self.on_change(paths)
