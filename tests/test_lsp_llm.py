"""The LLM proposer in the language server, end to end (pytest-lsp): the server runs the agent
loop against ``tests/fake_openai.py`` (a chat-completions server replaying scripted replies)
and the deterministic model runner (``tests/data/lsp/model_runner.py``).

What is modelled and what is scripted: the original kernel's timing is the model's (NOT a
measurement); the LLM's candidates were written here, so they get **scripted verdicts**
(``CUDALENS_REPLAY_SCRIPTED``, see ``tests/data/lsp/scripted.py``), recognised by a marker
comment in their source. The numbers
below test the plumbing (feedback, progress, offers, apply), not any kernel's speed.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path

import pytest
from lsprotocol import types

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from harness import TEST_SETTINGS, copy_example, editor  # noqa: E402
from model_runner import MODEL_DEVICE  # noqa: E402
from scripted import ScriptedVerdicts  # noqa: E402
from fake_openai import MODEL, FakeOpenAI, reply  # noqa: E402

from cudalens.lsp.config import Settings, parse_settings  # noqa: E402
from cudalens.engine.events import (Compiling, Confirming, LlmProposal, LlmRound,  # noqa: E402
                                    MeasuringOriginal, Stopped, Timed, TimingRound,
                                    Verifying)
from cudalens.lsp.llm import AgentProgress, action_label, agent_config, choose  # noqa: E402

SIG = "__global__ void saxpy(int n, float a, const float* x, float* y)"
GOOD = SIG + """
{
    // cudalens-test-candidate: good
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        y[i] = a * x[i] + y[i];
    }
}"""
WRONG = SIG + """
{
    // cudalens-test-candidate: wrong
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i] + 1.0f;
    }
}"""
SCRIPTED = {"candidates": [
    {"marker": "cudalens-test-candidate: good", "status": "passed",
     "speedup": [1.9, 1.87, 1.93]},
    {"marker": "cudalens-test-candidate: wrong", "status": "mismatch",
     "mismatch": {"buffer": "y", "index": 0, "expected": 2.5, "actual": 3.5,
                  "mismatched": 33554432, "total": 33554432}}]}
KEY_ENV = "CUDALENS_TEST_LLM_KEY"
KEY = "sk-test-not-a-real-key-0123456789abcdef"



def fenced(explanation: str, code: str) -> str:
    return f"{explanation}\n```cuda\n{code}\n```"


def llm_settings(url: str, **extra) -> dict:
    return {**TEST_SETTINGS, "proposer": "llm",
            "llm": {"baseUrl": url, "model": MODEL, "apiKeyEnv": KEY_ENV, "temperature": 0.2,
                    "rounds": 2, "candidatesPerRound": 1, "timeBudgetSeconds": 120,
                    "tokenBudget": 50000, **extra}}


def server_env(tmp_path: Path) -> dict[str, str]:
    scripted = tmp_path / "scripted-verdicts.json"
    scripted.write_text(json.dumps(SCRIPTED))
    return {"CUDALENS_REPLAY_SCRIPTED": str(scripted), KEY_ENV: KEY}


def ended(client, token: str):
    return [p for p in client.progress_reports.get(token, []) if p.kind == "end"]


def optimize_action(actions) -> types.CodeAction:
    return next(a for a in actions if a.command and a.command.command == "cudalens.optimize")


async def action_titled(client, uri: str, title: str) -> types.CodeAction:
    """The Optimize action once its title is ``title`` (the server reads its settings with
    workspace/configuration after ``initialized``: the first requests may precede them)."""
    for _ in range(200):
        action = optimize_action(await client.code_actions(uri, 5))
        if action.title == title:
            return action
        await asyncio.sleep(0.05)
    raise AssertionError(f"the Optimize action is titled {action.title!r}, expected {title!r}")


async def action_after_settings(client, uri: str) -> types.CodeAction:
    """The Optimize action once the server has read settings whose proposer is not the
    default's (its title then no longer reads ``built-in passes``)."""
    for _ in range(200):
        action = optimize_action(await client.code_actions(uri, 5))
        if not action.title.endswith("(built-in passes)"):
            return action
        await asyncio.sleep(0.05)
    raise AssertionError(f"the server's settings were not read: {action.title!r}")


def titles(lenses) -> list[tuple[str, str]]:
    return [(lens.command.title, lens.command.command) for lens in lenses]


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


# -- end to end ----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_llm_proposes_gets_feedback_and_its_winner_is_offered_and_applied(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    steps = [reply(fenced("Adds one, on purpose.", WRONG)),
             reply(fenced("A grid-stride loop.", GOOD))]
    with FakeOpenAI(steps) as fake:
        endpoint = f"{MODEL} at {fake.url}"
        # the model and server from the project file, the rest from the editor's settings
        (tmp_path / "cudalens.toml").write_text(f'[agent]\nmodel = "{MODEL}"\n'
                                                f'base_url = "{fake.url}"\n')
        settings = {**llm_settings(fake.url), "workspaceTrusted": True}  # it may name a server
        del settings["llm"]["model"], settings["llm"]["baseUrl"]
        async with editor(tmp_path, settings=settings, env=server_env(tmp_path)) as client:
            uri = client.open(path)
            action = await action_titled(client, uri, f"Optimize kernel saxpy (LLM {endpoint})")
            started = await client.run(action.command)
            assert started["ok"], started
            await client.wait_for(lambda: ended(client, started["token"]), timeout=60,
                                  what="the LLM optimization")
            reports = client.progress_reports[started["token"]]
            assert (reports[0].kind, reports[0].title) == ("begin", f"Optimize saxpy (LLM {endpoint})")
            messages = [p.message for p in reports]
            assert messages[1:3] == ["starting", f"proposer: the LLM {endpoint}"]
            assert f"measuring the original saxpy on {MODEL_DEVICE.name}" in messages
            assert "round 1/2: asking the model" in messages
            assert "round 1/2: r1c1 mismatch" in messages
            assert "round 2/2: asking the model" in messages
            assert "round 2/2, best 1.90x: r2c1 passed, 1.90x" in messages
            assert messages[-1] == (f"saxpy: best 1.90x (verified) from the LLM {endpoint}; "
                                    f"2 round(s), 2 proposal(s): 1 mismatch, 1 passed; "
                                    f"stopped: all 2 rounds done")

            # what the model was sent: the settings, the key from the named variable, feedback
            bodies = fake.chat_bodies()
            assert len(bodies) == 2
            assert {(b["model"], b["temperature"]) for b in bodies} == {(MODEL, 0.2)}
            auths = {r["auth"] for r in fake.requests if r["path"].endswith("/completions")}
            assert auths == {f"Bearer {KEY}"}
            second = "\n".join(m["content"] for m in bodies[1]["messages"]
                               if m["role"] == "user")
            assert ("r1c1 (code block 1): wrong results: the first mismatching "
                    "element is y[0] = 3.5, expected 2.5") in second

            # offered like a built-in candidate
            lenses = titles(await client.code_lenses(uri))
            assert lenses[1:] == [("Optimize again", "cudalens.optimize"),
                                  ("1.90x faster candidate: show diff", "cudalens.showDiff"),
                                  ("apply", "cudalens.apply"), ("reject", "cudalens.reject"),
                                  ("Capture a real launch", "cudalens.captureLaunch")]
            actions = await client.code_actions(uri, 5)
            assert [a.title for a in actions] == [
                f"Optimize kernel saxpy again (LLM {endpoint})",
                "Apply candidate (1.90x, verified)",
                "Show diff of candidate (llm r2c1)",
                "Reject candidate (1.90x, llm r2c1)",
                "Check this kernel for races and memory errors"]
            apply = next(a for a in actions if a.command.command == "cudalens.apply")
            answer = await client.run(apply.command)
            assert answer["ok"] and answer["applied"], answer
            text = client.text(uri)
            assert GOOD in text
            assert text.endswith(path.read_text().split("}\n", 1)[1])  # the host code is kept
            shown = "\n".join(m.message for m in client.messages) + "\n".join(
                m.message for m in getattr(client, "log_messages", []))
            assert KEY not in shown


@pytest.mark.asyncio
async def test_cancel_stops_a_request_in_flight_and_frees_the_worker(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    steps = [reply(fenced("slow", GOOD), delay_s=60.0),  # answered only after the test ends
             reply(fenced("A grid-stride loop.", GOOD))]
    with FakeOpenAI(steps) as fake:
        async with editor(tmp_path, settings=llm_settings(fake.url, rounds=1),
                          env=server_env(tmp_path)) as client:
            uri = client.open(path)
            first = await client.run((await action_after_settings(client, uri)).command)
            await client.wait_for(lambda: fake.chat_bodies(), what="the request to the model")
            client.window_work_done_progress_cancel(
                types.WorkDoneProgressCancelParams(token=first["token"]))
            end = await client.wait_for(lambda: ended(client, first["token"]), what="cancel")
            assert end[0].message == "saxpy: cancelled; no results kept"
            assert titles(await client.code_lenses(uri))[0] == ("Optimize", "cudalens.optimize")
            # the single worker thread is free again long before the slow reply would come
            second = await client.run(optimize_action(await client.code_actions(uri, 5)).command)
            end = await client.wait_for(lambda: ended(client, second["token"]), timeout=30,
                                        what="the second optimization")
            assert end[0].message.startswith("saxpy: best 1.90x (verified) from the LLM ")
            assert len(fake.chat_bodies()) == 2


@pytest.mark.asyncio
async def test_auto_with_an_unreachable_server_says_it_uses_the_built_in_passes(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    url = closed_port_url()
    # auto is the default: the project file's model makes it try the LLM
    (tmp_path / "cudalens.toml").write_text(f'[agent]\nmodel = "{MODEL}"\nbase_url = "{url}"\n')
    trusted = {**TEST_SETTINGS, "workspaceTrusted": True}  # so that its base_url counts
    async with editor(tmp_path, settings=trusted, env=server_env(tmp_path)) as client:
        uri = client.open(path)
        action = optimize_action(await client.code_actions(uri, 5))
        started = await client.run(action.command)
        warned = await client.wait_for(
            lambda: [m for m in client.messages if "cannot be used" in m.message],
            what="the fallback warning")
        assert warned[0].type == types.MessageType.Warning
        assert warned[0].message.startswith(
            f"cudalens: optimizing saxpy with the built-in passes (the LLM {MODEL} at {url} "
            f"cannot be used: ")
        reports = client.progress_reports[started["token"]]
        assert reports[0].title == f"Optimize saxpy (LLM {MODEL} at {url} if it answers, else " \
                                   f"built-in passes)"
        assert any((p.message or "").startswith("proposer: the built-in passes (the LLM ")
                   for p in reports)


@pytest.mark.asyncio
async def test_llm_without_a_model_fails_saying_what_to_set(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path, settings={**TEST_SETTINGS, "proposer": "llm"}) as client:
        uri = client.open(path)
        action = await action_titled(client, uri,
                                     "Optimize kernel saxpy (LLM: no model is configured)")
        started = await client.run(action.command)
        await client.wait_for(lambda: ended(client, started["token"]), what="the failure")
        errors = await client.wait_for(
            lambda: [m.message for m in client.messages if m.type == types.MessageType.Error],
            what="the error message")
        assert errors == ["cudalens: optimizing saxpy failed: cudalens.proposer is llm but no "
                          "model is configured: set cudalens.llm.model (and cudalens.llm.baseUrl "
                          "for a server other than OpenAI's) in the editor's settings, or model "
                          "in the [agent] table of cudalens.toml"]


# -- units -------------------------------------------------------------------------------------


def test_llm_settings_parse_and_become_the_editor_layer_of_the_agent_config(tmp_path):
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    (project / "cudalens.toml").write_text('[agent]\nmodel = "from-file"\nrounds = 7\n'
                                           'confirm_top = 0\n')
    settings, problems = parse_settings({"proposer": "auto", "llm": {
        "baseUrl": "http://localhost:8000/v1", "apiKeyEnv": "VLLM_KEY", "temperature": 0.3,
        "candidatesPerRound": 3, "rounds": 2, "timeBudgetSeconds": 0, "tokenBudget": 1000}})
    assert problems == []
    config = agent_config(settings, project / "k.cu")
    assert (config.model, config.base_url, config.api_key_env, config.temperature,
            config.candidates_per_round, config.rounds, config.time_budget_s,
            config.token_budget, config.confirm_top) == \
        ("from-file", "http://localhost:8000/v1", "VLLM_KEY", 0.3, 3, 2, None, 1000, 0)
    assert config.origin("rounds") == "editor settings (cudalens.agent)"
    assert config.origin("model").endswith("cudalens.toml [agent]")
    assert action_label(settings, project / "k.cu") == \
        "LLM from-file at http://localhost:8000/v1 if it answers, else built-in passes"
    # only the proposer known (a server that passes Settings.proposer): the project file's LLM
    assert action_label("llm", project / "k.cu") == "LLM from-file at https://api.openai.com/v1"
    assert action_label("auto", other / "k.cu") == "built-in passes"
    assert action_label("builtin", project / "k.cu") == "built-in passes"


def test_bad_llm_settings_are_reported_and_a_key_is_never_echoed():
    key = "sk-live-abcdefghijklmnopqrstuvwxyz"
    settings, problems = parse_settings({"proposer": "gpt", "llm": {
        "apiKeyEnv": key, "apiKey": key, "rounds": 0, "temperature": 3, "baseUrl": "localhost"}})
    assert settings == Settings()
    assert problems == [
        "cudalens.proposer: expected one of 'auto', 'builtin', 'llm', found 'gpt'; using the "
        "default",
        "cudalens.llm.baseUrl: expected an http:// or https:// URL such as "
        "http://localhost:8000/v1, found 'localhost'; using the default",
        "cudalens.llm.apiKeyEnv: expected the NAME of an environment variable holding the key "
        "(letters, digits and _, e.g. OPENAI_API_KEY), not the key, found a str; using the "
        "default",
        "cudalens.llm.temperature: expected a number from 0 to 2, found 3; using the default",
        "cudalens.llm.rounds: expected an integer from 1 to 50, found 0; using the default",
        "cudalens.llm.apiKey: an API key must not be written in settings (it would end up in "
        "files and logs); ignored. Put the key in an environment variable of the server and "
        "set cudalens.llm.apiKeyEnv to that variable's name"]
    assert key not in "\n".join(problems) and key not in repr(settings)


def test_choose_follows_the_proposer_setting(tmp_path):
    path = tmp_path / "k.cu"
    llm = Settings(proposer="llm", llm_model="m", llm_base_url="http://h:1/v1",
                   llm_api_key_env="NO_SUCH_VARIABLE_SET")
    chosen = choose(llm, path, probe=lambda c: None)
    assert (chosen.kind, chosen.label, chosen.reason) == (
        "llm", "LLM m at http://h:1/v1",
        "the LLM m at http://h:1/v1 (no key in $NO_SUCH_VARIABLE_SET; sent none)")
    auto = Settings(proposer="auto", llm_model="m", llm_base_url="http://h:1/v1")
    fell = choose(auto, path, probe=lambda c: "connection refused")
    assert (fell.kind, fell.fallback, fell.label, fell.reason) == (
        "builtin", True, "built-in passes",
        "the built-in passes (the LLM m at http://h:1/v1 cannot be used: connection refused)")
    assert choose(Settings(proposer="auto"), path, probe=lambda c: 1 / 0).reason == \
        "the built-in passes (no LLM is configured)"
    with pytest.raises(Exception, match="the LLM m at http://h:1/v1 cannot be used: down"):
        choose(llm, path, probe=lambda c: "down")
    (tmp_path / "cudalens.toml").write_text("[agent]\nrounds = 0\n")
    broken = choose(Settings(proposer="auto"), path, probe=lambda c: None)
    assert (broken.kind, broken.fallback) == ("builtin", True)
    assert broken.reason.startswith("the built-in passes (the LLM settings are unusable: ")
    assert "rounds: expected an integer >= 1, found 0" in broken.reason
    with pytest.raises(Exception, match="rounds: expected an integer >= 1, found 0"):
        choose(llm, path, probe=lambda c: None)


def test_agent_progress_counts_rounds_and_keeps_the_best_verified_speedup():
    p = AgentProgress(rounds=4)
    seen = [p.describe(m) for m in [
        MeasuringOriginal("saxpy", "NVIDIA H200"), Compiling("baseline"),
        LlmRound(1, "asking", endpoint="fake at http://x/v1"),
        LlmProposal(1, "r1c1", "does not compile"),
        LlmRound(1, "measuring", variants=2, device="NVIDIA H200"),
        Verifying("r1c2", "nominal", 1), TimingRound(25, 50),
        LlmProposal(1, "r1c2", "passed", 1.8), LlmRound(2, "asking", endpoint="fake at x"),
        LlmProposal(2, "r2c1", "passed", 0.9), LlmProposal(2, "r2c2", "mismatch"),
        Confirming(("final1", "final2")), Stopped("all 4 rounds done")]]
    assert seen == [
        ("measuring the original saxpy on NVIDIA H200", 0),
        ("measuring the original: compiling baseline", 1),
        ("round 1/4: asking the model", 5),
        ("round 1/4: r1c1 does not compile", 26),
        ("round 1/4: verifying and timing 2 variant(s)", 11),
        ("round 1/4: verifying r1c2 against the original", 16),
        ("round 1/4: timing round 25/50", 22),
        ("round 1/4, best 1.80x: r1c2 passed, 1.80x", 26),
        ("round 2/4, best 1.80x: asking the model", 27),
        ("round 2/4, best 1.80x: r2c1 passed, 0.90x", 48),
        ("round 2/4, best 1.80x: r2c2 mismatch", 48),
        ("timing the best 2 candidates again side by side", 95),
        ("LLM stopped: all 4 rounds done", 99)]
    assert p.describe(Timed("r2c1", 4.5)) is None  # the results show times


def test_scripted_verdicts_are_labelled_and_scale_the_baseline(tmp_path):
    from gpu_runner.report import Timing

    f = tmp_path / "s.json"
    f.write_text(json.dumps(SCRIPTED))
    scripted = ScriptedVerdicts(f)

    class V:
        source = GOOD

    entry = scripted.find(V())
    base = Timing("baseline", 100.0, 99.0, 101.0, 98.0, 50, 1000.0, 25.0, 10.0)

    class P:
        cases = [type("C", (), {"label": "nominal"})()]
        seeds = [1]

    r = entry.result("r2c1", base, P())
    assert (r.verdict.status, r.verdict.reason) == (
        "passed", "scripted test verdict, not a measurement (marker "
                  "'cudalens-test-candidate: good')")
    assert (round(r.timing.median_us, 6), round(r.timing.achieved_gbps, 6), r.speedup.ci_low) \
        == (round(100 / 1.9, 6), 1900.0, 1.87)
    V.source = "no marker"
    assert scripted.find(V()) is None


@pytest.mark.asyncio
async def test_the_action_title_names_the_model_set_in_the_editor(tmp_path):
    # the model and server from the editor's settings only (no cudalens.toml): the title must
    # not say that no model is configured
    path = copy_example(tmp_path, "saxpy.cu")
    url = "http://127.0.0.1:9/v1"
    async with editor(tmp_path, settings=llm_settings(url), env=server_env(tmp_path)) as client:
        uri = client.open(path)
        action = await action_titled(client, uri, f"Optimize kernel saxpy (LLM {MODEL} at {url})")
    assert action.command.command == "cudalens.optimize"
