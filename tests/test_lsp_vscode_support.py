"""The commands the VS Code extension adds on top of the lenses (``editor_support.py``):
``cudalens.candidateSource`` (the text a diff editor shows for a candidate) and
``cudalens.runnerStatus`` (the status bar's runner state and GPU). Driven with pytest-lsp
against a server whose runner is the deterministic model runner (``model_runner.py``: modelled
times, NOT measurements); expectations come from the search run against the same model.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import pytest
from lsprotocol import types

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from expected import expected
from harness import TEST_SETTINGS, copy_example, editor
from model_runner import MODEL_DEVICE, STEP_ENV

pytestmark = pytest.mark.asyncio

SAXPY = expected("saxpy", TEST_SETTINGS["budget"]["candidates"],
                 TEST_SETTINGS["budget"]["repetitions"])
BEST, SECOND = SAXPY.best, SAXPY.second


def _cmd(name: str, *arguments) -> types.Command:
    return types.Command(title=name, command=name, arguments=list(arguments))


async def _optimized(client, uri: str) -> dict:
    """Optimizes saxpy and returns the showDiff lens's argument (the offered candidate)."""
    started = await client.run(_cmd("cudalens.optimize", {"uri": uri, "kernel": "saxpy"}))
    assert started["ok"], started
    await client.wait_for(
        lambda: [p for p in client.progress_reports.get(started["token"], []) if p.kind == "end"],
        what="the optimization")
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri)))
    (show,) = [lens.command for lens in lenses if lens.command.command == "cudalens.showDiff"]
    return show.arguments[0]


async def test_candidate_source_is_the_text_apply_leaves(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    original = path.read_text()
    async with editor(tmp_path) as client:
        uri = client.open(path)
        args = await _optimized(client, uri)
        shown = await client.run(_cmd("cudalens.candidateSource", args))
        assert shown["ok"] is True
        assert shown["label"] == BEST["label"] != SECOND["label"]
        assert shown["title"].startswith(f"{BEST['label']}: {BEST['speedup']['value']:.2f}x [")
        assert shown["title"].endswith(f"faster on {SAXPY.device}, verified")
        assert shown["version"] == 1
        assert shown["text"] == SAXPY.source_of(BEST) != original
        # the document on disk is not touched by asking
        assert path.read_text() == original

        answer = await client.run(_cmd("cudalens.apply", args))
        assert answer["applied"] is True
        assert client.text(uri) == shown["text"]
        # and that text is the winner's: the original changed by the winner's diff
        diff = difflib.unified_diff(original.splitlines(True), shown["text"].splitlines(True),
                                    "a", "b")
        assert list(diff)[2:] == SAXPY.diff.splitlines(True)[2:]


async def test_candidate_source_refuses_an_unknown_candidate_without_a_message(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path) as client:
        uri = client.open(path)
        args = await _optimized(client, uri)
        before = len(client.messages)
        shown = await client.run(_cmd("cudalens.candidateSource", {**args, "candidate": "nope"}))
        assert shown["ok"] is False
        assert "nope" in shown["reason"]
        assert len(client.messages) == before

        closed = await client.run(_cmd("cudalens.candidateSource",
                                       {**args, "uri": (tmp_path / "other.cu").as_uri()}))
        assert closed == {"ok": False,
                          "reason": f"{(tmp_path / 'other.cu').as_uri()} is not an open CUDA "
                                    f"document"}


async def test_runner_status_before_and_after_a_run(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path) as client:
        uri = client.open(path)
        before = await client.run(_cmd("cudalens.runnerStatus"))
        assert before == {"state": "idle", "kernel": None, "message": None, "queued": 0,
                          "runner": "local GPU", "device": None, "deviceId": None}
        await _optimized(client, uri)
        after = await client.run(_cmd("cudalens.runnerStatus"))
        assert after == {"state": "idle", "kernel": None, "message": None, "queued": 0,
                         "runner": "local GPU", "device": MODEL_DEVICE.name,
                         "deviceId": f"{MODEL_DEVICE.name}/sm_90/{MODEL_DEVICE.sm_count}"}


async def test_runner_status_while_running_names_the_kernel(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    settings = {"check": {"enabled": False}, "runner": {"url": "http://gpu-box:8765"}}
    async with editor(tmp_path, settings=settings,
                      env={STEP_ENV: "0.05"}) as client:
        uri = client.open(path)
        started = await client.run(_cmd("cudalens.optimize", {"uri": uri, "kernel": "saxpy"}))
        running = await client.wait_for(_state_is(client, "running"), what="a running job")
        assert (running["kernel"], running["runner"], running["queued"]) == \
            ("saxpy", "http://gpu-box:8765", 0)
        assert running["message"]
        await client.run(_cmd("cudalens.cancel", {"uri": uri, "kernel": "saxpy"}))
        idle = await client.run(_cmd("cudalens.runnerStatus"))
        assert (idle["state"], idle["kernel"]) == ("idle", None), started


def _state_is(client, state: str):
    async def check():
        status = await client.run(_cmd("cudalens.runnerStatus"))
        return status if status["state"] == state else None
    return check


async def test_without_a_run_status_is_idle_and_there_is_no_candidate_source(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path) as client:
        uri = client.open(path)
        status = await client.run(_cmd("cudalens.runnerStatus"))
        assert status == {"state": "idle", "kernel": None, "message": None, "queued": 0,
                          "runner": "local GPU", "device": None, "deviceId": None}
        args = {"uri": uri, "kernel": "saxpy", "candidate": "c1"}
        shown = await client.run(_cmd("cudalens.candidateSource", args))
        assert shown == {"ok": False,
                         "reason": "the results for saxpy are stale; run Optimize again"}
        other = (tmp_path / "other.cu").as_uri()
        closed = await client.run(_cmd("cudalens.candidateSource", {**args, "uri": other}))
        assert closed == {"ok": False, "reason": f"{other} is not an open CUDA document"}
        with pytest.raises(Exception, match="expected a string 'candidate'"):
            await client.run(_cmd("cudalens.candidateSource", {"uri": uri, "kernel": "saxpy"}))
