"""The workspace watcher (``cudalens.lsp.watcher``): changes on disk are delivered once,
coalesced, and never after ``stop`` (a delivery after shutdown reached the closed results
store: ``sqlite3.ProgrammingError: Cannot operate on a closed database``, seen on the H200).
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from cudalens.lsp.watcher import Watcher

pytestmark = pytest.mark.asyncio

SETTLE_S = 0.3


async def _until(predicate, timeout: float = 5.0, what: str = "a condition") -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.01)


class _StoreUser:
    """An ``on_change`` that writes to a SQLite database, like the session's does."""

    def __init__(self, path: Path):
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE changed (path TEXT)")
        self.calls: list[set[str]] = []

    def __call__(self, paths: set[str]) -> None:
        self.calls.append(paths)
        self.db.executemany("INSERT INTO changed VALUES (?)", [(p,) for p in sorted(paths)])


async def test_changes_are_coalesced_and_delivered(tmp_path):
    user = _StoreUser(tmp_path / "db.sqlite")
    watcher = Watcher([tmp_path], user, settle_s=SETTLE_S)
    watcher.start()
    try:
        (tmp_path / "a.cu").write_text("// a\n")
        (tmp_path / "a.cu.spec").write_text("kernel a\n")
        (tmp_path / "notes.txt").write_text("not watched\n")
        await _until(lambda: user.calls, what="the delivery")
        await asyncio.sleep(SETTLE_S * 2)  # nothing more comes for the same writes
    finally:
        watcher.stop()
    assert user.calls == [{str((tmp_path / "a.cu").resolve()),
                           str((tmp_path / "a.cu.spec").resolve())}]


async def test_a_pending_delivery_is_dropped_at_stop(tmp_path):
    user = _StoreUser(tmp_path / "db.sqlite")
    watcher = Watcher([tmp_path], user, settle_s=SETTLE_S)
    watcher.start()
    (tmp_path / "a.cu").write_text("// a\n")
    await _until(lambda: watcher._flush is not None, what="the change to be pending")
    watcher.stop()
    user.db.close()  # what the session's shutdown does to the store right after
    await asyncio.sleep(SETTLE_S * 2)  # past the moment it would have been delivered
    assert user.calls == []
    assert watcher.stopped


async def test_events_after_stop_are_ignored_and_start_after_stop_does_nothing(tmp_path):
    user = _StoreUser(tmp_path / "db.sqlite")
    watcher = Watcher([tmp_path], user, settle_s=0.01)
    watcher.start()
    watcher.stop()
    # the observer thread may still hand over an event it had in hand when told to stop
    watcher._from_thread(str(tmp_path / "late.cu"))
    await asyncio.sleep(0.05)
    watcher._add(str(tmp_path / "late.cu"))
    watcher._deliver()
    watcher.start()  # shutdown came before "initialized": nothing is watched
    (tmp_path / "later.cu").write_text("// later\n")
    await asyncio.sleep(0.2)
    assert user.calls == []
    assert watcher._observer is None
