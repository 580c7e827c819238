"""A stuck nvcc for tests: a shell script that starts a sleeping grandchild (as nvcc starts
cicc), writes its own pid and the grandchild's, and sleeps; and checks that such processes
ended."""

from __future__ import annotations

import stat
import time
from pathlib import Path


def fake_nvcc(tmp_path: Path) -> tuple[Path, Path]:
    """An executable that acts like a stuck nvcc: a grandchild (like cicc) sleeps, its pid
    and the script's are written to the pid file. Returns (script, pid file)."""
    pids = tmp_path / "pids"
    script = tmp_path / "fake-nvcc"
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $$ $! > {pids}.tmp\nmv {pids}.tmp {pids}\n"
                      "sleep 300\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, pids


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie that no one reaped has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_pids(pids: Path, timeout: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while not pids.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"the fake nvcc wrote no {pids} within {timeout} s")
        time.sleep(0.02)
    found = [int(p) for p in pids.read_text().split()]
    assert len(found) == 2 and all(alive(p) for p in found), found
    return found


def read_pids(pids: Path) -> list[int]:
    found = [int(p) for p in pids.read_text().split()]
    assert len(found) == 2, found
    return found


def assert_all_ended(found: list[int], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in found) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in found if alive(p)] == [], "a process of the fake nvcc outlived it"
