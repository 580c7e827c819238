"""No compiler process outlives a compile check (issue 11, item 7): nvcc starts cicc and
ptxas, which did not die with it; a timeout, ``stop_all`` (the language server's shutdown)
and an interrupt end nvcc's whole process group. A fake nvcc (a shell script) starts a
sleeping grandchild, writes its pid, and then sleeps itself.
"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from harness import copy_example, editor  # noqa: E402

from cudalens.check import NvccTimeout, compile_check  # noqa: E402
from cudalens.check.nvcc import NvccStopped, run_nvcc, stop_all  # noqa: E402


def _fake_nvcc(tmp_path: Path) -> tuple[Path, Path]:
    """An executable that acts like a stuck nvcc: a grandchild (like cicc) sleeps, its pid
    and the script's are written to the pid file. Returns (script, pid file)."""
    pids = tmp_path / "pids"
    script = tmp_path / "fake-nvcc"
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $$ $! > {pids}.tmp\nmv {pids}.tmp {pids}\n"
                      "sleep 300\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, pids


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie that no one reaped has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _wait_pids(pids: Path, timeout: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while not pids.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"the fake nvcc wrote no {pids} within {timeout} s")
        time.sleep(0.02)
    found = [int(p) for p in pids.read_text().split()]
    assert len(found) == 2 and all(_alive(p) for p in found), found
    return found


def _read_pids(pids: Path) -> list[int]:
    found = [int(p) for p in pids.read_text().split()]
    assert len(found) == 2, found
    return found


def _assert_all_ended(found: list[int], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while any(_alive(p) for p in found) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in found if _alive(p)] == [], "a process of the fake nvcc outlived it"


def test_timeout_ends_nvcc_and_its_children(tmp_path):
    script, pids = _fake_nvcc(tmp_path)
    start = time.monotonic()
    with pytest.raises(NvccTimeout) as info:
        run_nvcc([str(script), "x.cu"], timeout=1.0)
    assert time.monotonic() - start < 15
    assert str(info.value).startswith(f"nvcc did not finish within 1 s compiling x.cu (command: "
                                      f"{script} x.cu); it was stopped with every process it "
                                      "started")
    _assert_all_ended(_read_pids(pids))


def test_compile_check_timeout_ends_the_group(tmp_path):
    script, pids = _fake_nvcc(tmp_path)
    source = tmp_path / "k.cu"
    source.write_text("__global__ void k() {}\n", encoding="utf-8")
    with pytest.raises(NvccTimeout):
        compile_check(str(source), nvcc=str(script), timeout=1.0)
    _assert_all_ended(_read_pids(pids))


def test_stop_all_from_another_thread_ends_a_running_check(tmp_path):
    script, pids = _fake_nvcc(tmp_path)
    raised: list[BaseException] = []

    def check() -> None:
        try:
            run_nvcc([str(script), "y.cu"], timeout=300)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            raised.append(exc)

    worker = threading.Thread(target=check)
    worker.start()
    found = _wait_pids(pids)
    assert stop_all() == 1
    worker.join(15)
    assert not worker.is_alive()
    assert [type(e) for e in raised] == [NvccStopped]
    assert str(raised[0]) == ("nvcc was stopped while compiling y.cu: the check was ended (the "
                              "server is shutting down)")
    _assert_all_ended(found)
    assert stop_all() == 0


def test_an_interrupt_while_waiting_ends_the_group(tmp_path):
    script, pids = _fake_nvcc(tmp_path)
    found: list[int] = []

    def interrupt_when_started() -> None:
        found.extend(_wait_pids(pids))
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C; the main thread waits for nvcc

    # Python's own handler, whatever the test run was started with (SIGINT may be ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        sender = threading.Thread(target=interrupt_when_started)
        sender.start()
        with pytest.raises(KeyboardInterrupt):
            run_nvcc([str(script), "z.cu"], timeout=300)
        sender.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    _assert_all_ended(found)


@pytest.mark.asyncio
async def test_language_server_shutdown_during_a_check_ends_nvcc(tmp_path):
    script, pids = _fake_nvcc(tmp_path)
    path = copy_example(tmp_path, "saxpy.cu")
    settings = {"check": {"enabled": True, "debounceMs": 0, "nvcc": str(script)}}
    async with editor(tmp_path, settings=settings) as client:
        client.open(path)
        found = await asyncio.get_running_loop().run_in_executor(None, _wait_pids, pids)
    assert client._server.returncode == 0
    _assert_all_ended(found)
