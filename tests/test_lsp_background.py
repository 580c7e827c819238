"""``cudalens.lsp.background``: the background runs that the captures and the sanitizer checks
share. A run's result comes back; a failure ends the progress with the part's words (a
``CudalensError`` as it is, anything else with its type and a logged traceback); a
cancellation ends it with the part's sentence; after ``shutdown`` nothing more is told. The
notifier records what is told."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

import pytest
from lsprotocol import types

from cudalens.errors import CudalensError
from cudalens.lsp.background import Background, Words, open_kernel
from cudalens.lsp.commands import KernelArgs
from cudalens.lsp.documents import analyze

pytestmark = pytest.mark.asyncio

WORDS = Words("check", "checked", "checking", types.MessageType.Warning)
LOG = logging.getLogger("cudalens.lsp.test_part")


class _Told:
    """The notifier calls a background run makes, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def show_message(self, text, kind):
        self.calls.append(("show", text, kind))

    def progress_end(self, token, text):
        self.calls.append(("end", token, text))


class _Stop(Exception):
    pass


def _part():
    told = _Told()
    return told, Background(told, "test", WORDS, LOG)


async def test_a_run_returns_its_result_and_tells_nothing():
    told, bg = _part()
    after = []
    assert (bg.token(), bg.token()) == ("cudalens/test/1", "cudalens/test/2")
    assert await bg.run("cudalens/test/2", "saxpy", lambda: threading.current_thread().name,
                        after=lambda: after.append(True)) == (True, "cudalens-test_0")
    assert after == [True] and told.calls == []
    bg.shutdown()


async def test_a_failure_is_told_in_the_parts_words(caplog):
    told, bg = _part()
    after = []

    def fails(exc):
        def work():
            raise exc
        return work

    with caplog.at_level(logging.WARNING, logger=LOG.name):
        assert await bg.run("t/1", "saxpy", fails(CudalensError("no runner at :9")),
                            after=lambda: after.append(told.calls[:])) == (False, None)
        assert await bg.run("t/2", "scale", fails(RuntimeError("  boom ")),
                            after=lambda: after.append(1)) == (False, None)
        assert await bg.run("t/3", "scale", fails(ValueError()),
                            after=lambda: after.append(2)) == (False, None)
    assert told.calls == [
        ("show", "cudalens: saxpy was not checked: no runner at :9", types.MessageType.Warning),
        ("end", "t/1", "saxpy: not checked"),
        ("show", "cudalens: scale was not checked: RuntimeError: boom",
         types.MessageType.Warning),
        ("end", "t/2", "scale: not checked"),
        ("show", "cudalens: scale was not checked: ValueError: ValueError",
         types.MessageType.Warning),
        ("end", "t/3", "scale: not checked"),
    ]
    assert after == [told.calls[:2], 1, 2]  # after() runs once the failure is told
    logged = [(r.name, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert logged == [(LOG.name, "checking scale failed", True)] * 2  # not the CudalensError
    bg.shutdown()


async def test_a_cancellation_ends_the_progress_with_the_parts_sentence():
    told, bg = _part()

    def work():
        raise _Stop("stopped")

    assert await bg.run("t/1", "saxpy", work, after=lambda: None, cancelled=(_Stop,),
                        cancelled_end="saxpy: cancelled, nothing saved") == (False, None)
    assert told.calls == [("end", "t/1", "saxpy: cancelled, nothing saved")]
    bg.shutdown()


async def test_after_shutdown_nothing_is_told():
    for outcome in ("returns", "fails", "cancelled"):
        told, bg = _part()
        started, release = threading.Event(), threading.Event()
        after = []

        def work():
            started.set()
            release.wait(30)
            if outcome == "fails":
                raise RuntimeError("late")
            if outcome == "cancelled":
                raise _Stop()
            return 7

        running = asyncio.ensure_future(bg.run("t/1", "saxpy", work, cancelled=(_Stop,),
                                               cancelled_end="cancelled",
                                               after=lambda: after.append(True)))
        assert await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
        bg.shutdown()
        release.set()
        assert await running == (False, None), outcome
        assert after == [True] and told.calls == [], outcome


async def test_a_refusal_is_a_warning_and_the_answer():
    told, bg = _part()
    assert bg.refuse("saxpy is being checked already") == {
        "ok": False, "reason": "saxpy is being checked already"}
    assert told.calls == [("show", "cudalens: cannot check: saxpy is being checked already",
                           types.MessageType.Warning)]
    bg.shutdown()


async def test_open_kernel_finds_the_documents_kernel_or_says_why_not():
    text = ("__global__ void scale(int n, float a, float* y) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (i < n) y[i] = a * y[i];\n"
            "}\n")
    uri = "file:///w/scale.cu"
    snap = analyze(uri, Path("/w/scale.cu"), 3, text, "utf-16")
    found, view = open_kernel(snap, KernelArgs(uri, "scale"))
    assert found is snap and view.name == "scale" and view.kernel.range.start.line == 0
    with pytest.raises(KeyError) as missing:
        open_kernel(snap, KernelArgs(uri, "saxpy"))
    assert missing.value.args == ("scale.cu has no __global__ kernel 'saxpy' (kernels: scale)",)
    with pytest.raises(KeyError) as closed:
        open_kernel(None, KernelArgs("file:///w/other.cu", "scale"))
    assert closed.value.args == ("file:///w/other.cu is not an open CUDA document",)
