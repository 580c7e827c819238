"""Watching the workspace for ``.cu``, ``.cuh`` and ``.spec`` files changed outside the editor.

A watchdog observer (its own thread) sees files written by ``git checkout``, another tool or
another editor. Events are handed to the event loop and coalesced for ``settle_s`` (a
checkout writes many files at once), then ``on_change(paths)`` runs on the loop with the set
of absolute paths created, changed, moved or deleted. Paths under ``.cudalens/``, ``.git/``
and virtual environments are ignored.
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
    """Watches ``roots`` recursively; call ``start`` on the event loop, ``stop`` at shutdown."""

    def __init__(self, roots: list[Path], on_change: Callable[[set[str]], None],
                 settle_s: float = 0.1):
        self.roots = roots
        self.on_change = on_change
        self.settle_s = settle_s
        self._observer: Optional[Observer] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._pending: set[str] = set()
        self._flush: Optional[asyncio.TimerHandle] = None

    def start(self) -> None:
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
        if self._observer is not None:
            self._observer.stop()
            self._observer = None

    def _from_thread(self, path: str) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._add, path)

    def _add(self, path: str) -> None:
        self._pending.add(path)
        if self._flush is None:
            self._flush = self._loop.call_later(self.settle_s, self._deliver)

    def _deliver(self) -> None:
        paths, self._pending, self._flush = self._pending, set(), None
        if paths:
            self.on_change(paths)
