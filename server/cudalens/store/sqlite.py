"""``ResultsStore``: optimize runs, rejected candidates and a few facts, in one SQLite file.

The language server keeps it at ``<workspace>/.cudalens/results.db``. Tables::

    meta(name PRIMARY KEY, value)                  schema version, last device seen
    runs(id, key, path, kernel, device, base_sha, created, record, profile)
                                                   record: RunRecord as JSON (without its
                                                   profile); profile: RunProfile as JSON
                                                   or NULL
    rejections(key, candidate, created)            the user rejected candidate for key

Runs are looked up by key (exact results for the current source, spec, flags and device)
or by (path, kernel) for the newest run of a kernel whatever its key (to say that results
exist but are stale). Safe to use from several threads: one connection behind a lock. WAL
journaling lets another process read while the server writes.

Migration: files written before profiles were stored have no ``runs.profile`` column; opening
one adds it (``ALTER TABLE ... ADD COLUMN``, NULL for the old runs, which read back with
``profile=None``). The change is additive, so the schema version stays 1 and an older
cudalens still reads a migrated file (it never selects the new column).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import replace
from pathlib import Path
from typing import Optional, Union

from cudalens.store.keys import device_id
from cudalens.store.records import (RunProfile, RunRecord, from_dict, profile_from_dict,
                                    profile_to_dict, to_dict)

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    path TEXT NOT NULL,
    kernel TEXT NOT NULL,
    device TEXT NOT NULL,
    base_sha TEXT NOT NULL,
    created TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_key ON runs (key, id);
CREATE INDEX IF NOT EXISTS runs_by_kernel ON runs (path, kernel, id);
CREATE TABLE IF NOT EXISTS rejections (
    key TEXT NOT NULL,
    candidate TEXT NOT NULL,
    created TEXT NOT NULL,
    PRIMARY KEY (key, candidate)
);
"""

# Columns added to ``runs`` after schema 1 was first written: name -> declaration.
_ADDED_RUN_COLUMNS = {"profile": "TEXT"}


class StoreError(RuntimeError):
    """The results file cannot be opened or holds something else; the message names it."""


class ResultsStore:
    """Optimize runs and rejections, persisted in SQLite (``":memory:"`` for none).

    Raises:
        StoreError: the file cannot be created or opened, is not a cudalens results file, or
            was written by a different schema version.
    """

    def __init__(self, path: Union[str, Path]):
        self.path = str(path)
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder of the results store {self.path}: "
                                 f"{exc}") from None
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
            self._migrate()
            found = self._meta("schema")
            if found is None:
                self._set_meta("schema", SCHEMA_VERSION)
            elif found != SCHEMA_VERSION:
                raise StoreError(f"{self.path}: expected results store schema {SCHEMA_VERSION}, "
                                 f"found {found}; move the file away to start a new store")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: expected a cudalens results store (SQLite), "
                             f"cannot use it: {exc}") from None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _migrate(self) -> None:
        """Adds the columns of ``_ADDED_RUN_COLUMNS`` that the file lacks (module doc)."""
        have = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
        for name, decl in _ADDED_RUN_COLUMNS.items():
            if name in have:
                continue
            try:
                self._db.execute(f"ALTER TABLE runs ADD COLUMN {name} {decl}")
            except sqlite3.OperationalError as exc:
                if "duplicate column" not in str(exc):  # another process added it just now
                    raise

    # -- runs ------------------------------------------------------------------------------

    def put_run(self, record: RunRecord) -> None:
        """Stores ``record`` (a newer run for the same key hides older ones); its profile goes
        to the ``profile`` column."""
        data = to_dict(record)
        data.pop("profile", None)
        text = json.dumps(data, separators=(",", ":"))
        with self._lock:
            self._db.execute(
                "INSERT INTO runs (key, path, kernel, device, base_sha, created, record, "
                "profile) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (record.key, record.path, record.kernel, device_id(record.device),
                 record.base_sha, record.created, text, _profile_text(record.profile)))

    def set_profile(self, key: str, profile: Optional[RunProfile]) -> bool:
        """Sets the profile of the newest run stored under ``key``; False when there is none."""
        with self._lock:
            cur = self._db.execute(
                "UPDATE runs SET profile = ? WHERE id = (SELECT id FROM runs WHERE key = ? "
                "ORDER BY id DESC LIMIT 1)", (_profile_text(profile), key))
            return cur.rowcount > 0

    def run_for_key(self, key: str) -> Optional[RunRecord]:
        """The newest run stored under ``key``, or None."""
        return self._one("SELECT record, profile FROM runs WHERE key = ? ORDER BY id DESC "
                         "LIMIT 1", (key,))

    def latest_run(self, path: str, kernel: str) -> Optional[RunRecord]:
        """The newest run of ``kernel`` (qualified name) in the file ``path``, any key."""
        return self._one("SELECT record, profile FROM runs WHERE path = ? AND kernel = ? "
                         "ORDER BY id DESC LIMIT 1", (path, kernel))

    def run_count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]

    def _one(self, sql: str, args: tuple) -> Optional[RunRecord]:
        with self._lock:
            row = self._db.execute(sql, args).fetchone()
        if row is None:
            return None
        try:
            record = from_dict(json.loads(row[0]))
        except (ValueError, json.JSONDecodeError) as exc:
            raise StoreError(f"{self.path}: a stored run cannot be read back ({exc})") from None
        if row[1] is None:
            return record
        try:
            profile = profile_from_dict(json.loads(row[1]))
        except (ValueError, json.JSONDecodeError) as exc:
            raise StoreError(f"{self.path}: the profile of a stored run of {record.kernel} "
                             f"cannot be read back ({exc})") from None
        return replace(record, profile=profile)

    # -- rejections ------------------------------------------------------------------------

    def reject(self, key: str, candidate: str, created: str) -> None:
        """Records that the user rejected ``candidate`` (an id) of the results under ``key``."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO rejections (key, candidate, created) "
                             "VALUES (?, ?, ?)", (key, candidate, created))

    def rejected(self, key: str) -> frozenset[str]:
        """Ids of the candidates rejected for ``key``."""
        with self._lock:
            rows = self._db.execute("SELECT candidate FROM rejections WHERE key = ?",
                                    (key,)).fetchall()
        return frozenset(r[0] for r in rows)

    # -- facts -----------------------------------------------------------------------------

    def get_fact(self, name: str) -> Optional[str]:
        with self._lock:
            return self._meta(name)

    def set_fact(self, name: str, value: str) -> None:
        with self._lock:
            self._set_meta(name, value)

    def _meta(self, name: str) -> Optional[str]:
        row = self._db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else row[0]

    def _set_meta(self, name: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", (name, value))


def _profile_text(profile: Optional[RunProfile]) -> Optional[str]:
    return None if profile is None else json.dumps(profile_to_dict(profile),
                                                   separators=(",", ":"))
