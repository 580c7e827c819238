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

from harness import RUNNER_FACTORY, SERVER_COMMAND, TEST_SETTINGS, copy_example, editor, uri  # noqa: E402,E501
from live_fake_runner import fake_runner_process  # noqa: E402
from test_lsp_optimize import action, ended  # noqa: E402

pytestmark = pytest.mark.asyncio

TOKEN = "lsp-live-runner-token-0123456789"
LIVE_COMMAND = [c for c in SERVER_COMMAND
                if c not in ("--runner-factory", RUNNER_FACTORY)]


def _settings(url: str) -> dict:
    return {**TEST_SETTINGS, "proposer": "builtin", "profile": False,
            "runner": {"url": url, "token": TOKEN},
            "budget": {"candidates": 1, "repetitions": 5}}


def _server(workspace: Path, settings: dict, log: Path):
    """``harness.editor`` with the live runner client (no replay), logging to ``log``."""
    return editor(workspace, settings, command=LIVE_COMMAND + ["--log-file", str(log)])


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
        async with _server(work, _settings(url), tmp_path / "server.log") as client:
            token = await _optimize_until_verifying(client, path)
            client.set_configuration(_settings("http://127.0.0.1:9"), section="cudalens")
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings=None))
            end = await client.wait_for(lambda: ended(client, token), timeout=90,
                                        what="the job's end")
            errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
    assert errors == []
    assert end[0].message == ("saxpy: best 2.00x (verified), 1/1 candidates verified "
                              "(built-in passes)")


async def test_shutdown_during_a_job_ends_its_progress_and_keeps_nothing(tmp_path):
    work = tmp_path / "work"
    path = _slow_saxpy(work)
    with fake_runner_process(tmp_path, TOKEN) as url:
        async with _server(work, _settings(url), tmp_path / "server.log") as client:
            token = await _optimize_until_verifying(client, path)
    assert [p.message for p in ended(client, token)] == [
        "saxpy: cancelled, the server is shutting down"]
    log = (tmp_path / "server.log").read_text()
    assert "ProgrammingError" not in log and "Traceback" not in log, log
    # nothing was stored for the kernel: a new session offers only "Optimize"
    nowhere = _settings("http://127.0.0.1:9")
    async with _server(work, nowhere, tmp_path / "server2.log") as client:
        doc = client.open(path)
        lenses = await client.code_lenses(doc)
    assert [lens.command.command for lens in lenses if lens.command] == ["cudalens.optimize",
                                                                   "cudalens.captureLaunch"]


async def test_apply_to_a_crlf_document_keeps_crlf(tmp_path):
    from fake_openai import MODEL, FakeOpenAI, reply

    work = tmp_path / "work"
    path = copy_example(work, "saxpy.cu")
    original = path.read_text().replace("\n", "\r\n")
    path.write_bytes(original.encode())
    (work / "cudalens.toml").write_text("[agent]\nsteps_per_round = 1\ntools = \"off\"\n"
                                        "max_retries = 0\nconfirm_top = 0\n")
    good = ("__global__ void saxpy(int n, float a, const float* x, float* y)\n{\n"
            "    // one fused multiply-add per element\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (i < n) y[i] = fmaf(a, x[i], y[i]);\n}")
    with fake_runner_process(tmp_path, TOKEN) as url, \
            FakeOpenAI([reply(f"```cuda\n{good}\n```")]) as fake:
        settings = {**_settings(url), "proposer": "llm",
                    "llm": {"baseUrl": fake.url, "model": MODEL, "rounds": 1,
                            "candidatesPerRound": 1}}
        async with _server(work, settings, tmp_path / "server.log") as client:
            doc = client.open(path, text=original)
            found = action(await client.code_actions(doc, 4), "cudalens.optimize")
            started = await client.run(found.command)
            await client.wait_for(lambda: ended(client, started["token"]), timeout=60,
                                  what="the optimization")
            actions = await client.code_actions(doc, 4)
            answer = await client.run(action(actions, "cudalens.apply").command)
            text = client.text(doc)
    assert answer["ok"] and answer["applied"], answer
    assert "    // one fused multiply-add per element\r\n" in text
    assert text.count("\n") == text.count("\r\n") > 10, repr(text[:300])


async def test_when_no_candidate_passes_verification_the_end_says_so(tmp_path):
    work = tmp_path / "work"
    path = copy_example(work, "saxpy.cu")
    path.write_text("// @mismatch (every candidate, the whole file, fails verification)\n"
                    + path.read_text())
    with fake_runner_process(tmp_path, TOKEN) as url:
        settings = {**_settings(url), "budget": {"candidates": 2, "repetitions": 5}}
        async with _server(work, settings, tmp_path / "server.log") as client:
            doc = client.open(path)
            found = action(await client.code_actions(doc, 4), "cudalens.optimize")
            started = await client.run(found.command)
            end = await client.wait_for(lambda: ended(client, started["token"]), timeout=60,
                                        what="the optimization")
    assert end[0].message == ("saxpy: none of the 2 candidates passed verification "
                              "(built-in passes)")


async def test_an_edit_during_the_run_is_said_at_its_end(tmp_path):
    work = tmp_path / "work"
    path = _slow_saxpy(work)
    with fake_runner_process(tmp_path, TOKEN) as url:
        async with _server(work, _settings(url), tmp_path / "server.log") as client:
            token = await _optimize_until_verifying(client, path)
            text = path.read_text()
            client.change(uri(path), text.replace("a * x[i] + y[i]", "a * x[i] + y[i] + 0"))
            end = await client.wait_for(lambda: ended(client, token), timeout=90,
                                        what="the job's end")
            actions = [a.title for a in await client.code_actions(uri(path), 5)]
    assert end[0].message == (
        "saxpy: best 2.00x (verified), 1/1 candidates verified (built-in passes); the kernel "
        "changed during the run, so these results are stale: run Optimize again to apply a "
        "candidate")
    assert not any(t.startswith("Apply candidate") for t in actions), actions


async def test_an_llm_candidate_that_leaves_outputs_unwritten_does_not_fail_the_job(tmp_path):
    # Issue 11, item 1: its NaN mismatch (index past 2^53) crossed HTTP as null and the job
    # failed; now it is rejected with its reason and the next round's candidate wins.
    from fake_openai import MODEL, FakeOpenAI, reply

    work = tmp_path / "work"
    path = copy_example(work, "saxpy.cu")
    (work / "cudalens.toml").write_text("[agent]\nsteps_per_round = 1\ntools = \"off\"\n"
                                        "max_retries = 0\nconfirm_top = 0\n")
    good = ("__global__ void saxpy(int n, float a, const float* x, float* y)\n{\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (i < n) y[i] = fmaf(a, x[i], y[i]);\n}")
    unwritten = good.replace("{\n", "{\n    // @nonfinite\n", 1)
    with fake_runner_process(tmp_path, TOKEN) as url, \
            FakeOpenAI([reply(f"```cuda\n{unwritten}\n```"),
                        reply(f"```cuda\n{good}\n```")]) as fake:
        settings = {**_settings(url), "proposer": "llm",
                    "llm": {"baseUrl": fake.url, "model": MODEL, "rounds": 2,
                            "candidatesPerRound": 1}}
        async with _server(work, settings, tmp_path / "server.log") as client:
            doc = client.open(path)
            found = action(await client.code_actions(doc, 4), "cudalens.optimize")
            started = await client.run(found.command)
            end = await client.wait_for(lambda: ended(client, started["token"]), timeout=90,
                                        what="the optimization")
            errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
        bodies = fake.chat_bodies()
    assert errors == []
    assert end[0].message.startswith("saxpy: best 2.00x (verified)"), end[0].message
    told = [m["content"] for m in bodies[1]["messages"] if m["role"] == "user"][-1]
    assert ("r1c1 (code block 1): unwritten: case 'nominal', seed 1: output 'z' was not written "
            "at index 9007199254740993") in told, told
