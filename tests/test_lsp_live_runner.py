"""The language server with a live runner process (``live_fake_runner``: the real runner
service, workers that fake only the GPU) while an optimization runs: a settings change that
points at another runner lets the running job finish against the runner it started with,
and a shutdown ends the job's progress and keeps nothing, without errors on the way out.

``// @slow`` at the top of the file makes the fake worker take 20 s to verify each
candidate, so there is time to act while the job runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lsprotocol import types

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))
sys.path.insert(0, str(Path(__file__).absolute().parent))

from harness import (SERVER_COMMAND, TEST_SETTINGS, _make_client, copy_example,  # noqa: E402
                     server_env, uri)
from live_fake_runner import fake_runner_process  # noqa: E402
from test_lsp_optimize import action, ended  # noqa: E402

pytestmark = pytest.mark.asyncio

TOKEN = "lsp-live-runner-token-0123456789"
LIVE_COMMAND = [c for c in SERVER_COMMAND
                if c not in ("--runner-factory", "replay_runner:make_client")]


def _settings(url: str) -> dict:
    return {**TEST_SETTINGS, "proposer": "builtin", "profile": False,
            "runner": {"url": url, "token": TOKEN},
            "budget": {"candidates": 1, "repetitions": 5}}


async def _start(workspace: Path, settings: dict, log: Path):
    client = _make_client()
    client.set_configuration(settings, section="cudalens")
    await client.start_io(*LIVE_COMMAND, "--log-file", str(log), env=server_env(),
                          cwd=str(workspace))
    await client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(
            window=types.WindowClientCapabilities(work_done_progress=True),
            workspace=types.WorkspaceClientCapabilities(configuration=True)),
        root_uri=uri(workspace),
        workspace_folders=[types.WorkspaceFolder(uri=uri(workspace), name=workspace.name)]))
    return client


def _slow_saxpy(folder: Path) -> Path:
    path = copy_example(folder, "saxpy.cu")
    path.write_text("// @slow\n" + path.read_text())
    return path


async def _optimize_until_verifying(client, path: Path) -> str:
    doc = client.open(path)
    found = action(await client.code_actions(doc, 4), "cudalens.optimize")
    started = await client.run(found.command)
    assert started["ok"], started
    token = started["token"]
    await client.wait_for(lambda: any("verifying against the baseline" in (p.message or "")
                                      for p in client.progress_reports.get(token, [])),
                          timeout=60, what="the candidate's verification")
    return token


async def test_a_runner_change_lets_the_running_job_finish_where_it_started(tmp_path):
    work = tmp_path / "work"
    path = _slow_saxpy(work)
    with fake_runner_process(tmp_path, TOKEN) as url:
        client = await _start(work, _settings(url), tmp_path / "server.log")
        try:
            token = await _optimize_until_verifying(client, path)
            client.set_configuration(_settings("http://127.0.0.1:9"), section="cudalens")
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings=None))
            end = await client.wait_for(lambda: ended(client, token), timeout=90,
                                        what="the job's end")
            errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
        finally:
            await client.shutdown_session()
            await client.stop()
    assert errors == []
    assert end[0].message == ("saxpy: best 2.00x (verified), 1/1 candidates verified "
                              "(built-in passes)")


async def test_shutdown_during_a_job_ends_its_progress_and_keeps_nothing(tmp_path):
    work = tmp_path / "work"
    path = _slow_saxpy(work)
    with fake_runner_process(tmp_path, TOKEN) as url:
        client = await _start(work, _settings(url), tmp_path / "server.log")
        try:
            token = await _optimize_until_verifying(client, path)
        finally:
            await client.shutdown_session()
            await client.stop()
    assert [p.message for p in ended(client, token)] == [
        "saxpy: cancelled, the server is shutting down"]
    log = (tmp_path / "server.log").read_text()
    assert "ProgrammingError" not in log and "Traceback" not in log, log
    # nothing was stored for the kernel: a new session offers only "Optimize"
    client = await _start(work, _settings("http://127.0.0.1:9"), tmp_path / "server2.log")
    try:
        doc = client.open(path)
        lenses = await client.code_lenses(doc)
    finally:
        await client.shutdown_session()
        await client.stop()
    assert [lens.command.command for lens in lenses if lens.command] == ["cudalens.optimize"]
