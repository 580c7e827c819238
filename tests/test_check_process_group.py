"""No compiler process outlives a compile check (issue 11, item 7): nvcc starts cicc and
ptxas, which did not die with it; a timeout, ``stop_all`` (the language server's shutdown)
and an interrupt end nvcc's whole process group. A fake nvcc (a shell script) starts a
sleeping grandchild, writes its pid, and then sleeps itself (``fake_nvcc``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from fake_nvcc import alive, assert_all_ended, fake_nvcc, read_pids, wait_pids  # noqa: E402
from harness import copy_example, editor  # noqa: E402

from cudalens.check import NvccTimeout, compile_check  # noqa: E402
from cudalens.check.nvcc import (NvccStopped, run_nvcc, stop_all, stop_tagged,  # noqa: E402
                                 tagged)


def test_timeout_ends_nvcc_and_its_children(tmp_path):
    script, pids = fake_nvcc(tmp_path)
    start = time.monotonic()
    with pytest.raises(NvccTimeout) as info:
        run_nvcc([str(script), "x.cu"], timeout=1.0)
    assert time.monotonic() - start < 15
    assert str(info.value).startswith(f"nvcc did not finish within 1 s compiling x.cu (command: "
                                      f"{script} x.cu); it was stopped with every process it "
                                      "started")
    assert_all_ended(read_pids(pids))


def test_compile_check_timeout_ends_the_group(tmp_path):
    script, pids = fake_nvcc(tmp_path)
    source = tmp_path / "k.cu"
    source.write_text("__global__ void k() {}\n", encoding="utf-8")
    with pytest.raises(NvccTimeout):
        compile_check(str(source), nvcc=str(script), timeout=1.0)
    assert_all_ended(read_pids(pids))


def test_stop_all_from_another_thread_ends_a_running_check(tmp_path):
    script, pids = fake_nvcc(tmp_path)
    raised: list[BaseException] = []

    def check() -> None:
        try:
            run_nvcc([str(script), "y.cu"], timeout=300)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            raised.append(exc)

    worker = threading.Thread(target=check)
    worker.start()
    found = wait_pids(pids)
    assert stop_all() == 1
    worker.join(15)
    assert not worker.is_alive()
    assert [type(e) for e in raised] == [NvccStopped]
    assert str(raised[0]) == ("nvcc was stopped while compiling y.cu: the check was ended "
                              "(superseded by an edit, or the server is shutting down)")
    assert_all_ended(found)
    assert stop_all() == 0


def test_an_interrupt_while_waiting_ends_the_group(tmp_path):
    script, pids = fake_nvcc(tmp_path)
    found: list[int] = []

    def interrupt_when_started() -> None:
        found.extend(wait_pids(pids))
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
    assert_all_ended(found)


@pytest.mark.asyncio
async def test_language_server_shutdown_during_a_check_ends_nvcc(tmp_path):
    script, pids = fake_nvcc(tmp_path)
    path = copy_example(tmp_path, "saxpy.cu")
    settings = {"check": {"enabled": True, "debounceMs": 0, "nvcc": str(script)}}
    async with editor(tmp_path, settings=settings) as client:
        client.open(path)
        found = await asyncio.get_running_loop().run_in_executor(None, wait_pids, pids)
    assert client._server.returncode == 0
    assert_all_ended(found)


def test_stop_tagged_ends_only_the_runs_with_that_tag(tmp_path):
    runs = {}
    for tag in ("a.cu", "b.cu"):
        folder = tmp_path / tag
        folder.mkdir()
        script, pids = fake_nvcc(folder)
        raised: list[BaseException] = []

        def check(script=script, tag=tag, raised=raised) -> None:
            with tagged(tag):
                try:
                    run_nvcc([str(script), tag], timeout=300)
                except BaseException as exc:  # noqa: BLE001 - collected for the assertion
                    raised.append(exc)

        worker = threading.Thread(target=check)
        worker.start()
        runs[tag] = (worker, wait_pids(pids), raised)
    assert stop_tagged("a.cu") == 1
    worker, found, raised = runs["a.cu"]
    worker.join(15)
    assert [type(e) for e in raised] == [NvccStopped]
    assert_all_ended(found)
    worker, found, raised = runs["b.cu"]
    assert worker.is_alive() and all(alive(p) for p in found)  # another document's check
    assert stop_all() == 1
    worker.join(15)
    assert_all_ended(found)


@pytest.mark.asyncio
async def test_an_edit_stops_the_check_of_the_older_version(tmp_path):
    script, pids = fake_nvcc(tmp_path)
    path = copy_example(tmp_path, "saxpy.cu")
    settings = {"check": {"enabled": True, "debounceMs": 0, "nvcc": str(script)}}
    loop = asyncio.get_running_loop()
    async with editor(tmp_path, settings=settings) as client:
        u = client.open(path)
        first = await loop.run_in_executor(None, wait_pids, pids)
        pids.unlink()
        client.change(u, client.text(u) + "\n// edited\n")
        await loop.run_in_executor(None, assert_all_ended, first)
        second = await loop.run_in_executor(None, wait_pids, pids)  # the new version's check
        assert all(alive(p) for p in second)
    assert_all_ended(second)
