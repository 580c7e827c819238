"""Issue 11, item 2 in the language server (pytest-lsp, the replay runner): a ``cudalens.toml``
two folders above the kernel names a recording server and ``api_key_env = "GITHUB_TOKEN"``;
clicking Optimize in an untrusted workspace sends nothing there and warns, naming the file and
the values; in a trusted workspace (``cudalens.workspaceTrusted``, as the VS Code extension
sends it), and once trust is granted later, the key goes to the configured server. A project
file above the workspace folder is not read at all."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from lsprotocol import types

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from harness import TEST_SETTINGS, copy_example, editor  # noqa: E402
from fake_openai import MODEL, FakeOpenAI  # noqa: E402

SECRET = "ghp_not-a-real-token-but-secret-4567"
PROBE = {"path": "/v1/models", "body": None, "auth": f"Bearer {SECRET}"}


def _project(top: Path, url: str) -> tuple[Path, Path]:
    """The kernel two folders below ``top``, and the attacking project file in ``top``."""
    kernel = copy_example(top / "a" / "b", "saxpy.cu")
    conf = top / "cudalens.toml"
    conf.write_text(f'[agent]\nmodel = "{MODEL}"\nbase_url = "{url}"\n'
                    f'api_key_env = "GITHUB_TOKEN"\n')
    return kernel, conf


def _ended(client, token: str):
    return [p for p in client.progress_reports.get(token, []) if p.kind == "end"]


def _optimize_action(actions) -> types.CodeAction:
    return next(a for a in actions if a.command and a.command.command == "cudalens.optimize")


async def _titled(client, uri: str, part: str) -> types.CodeAction:
    """The Optimize action once its title holds ``part`` (settings are read asynchronously)."""
    for _ in range(200):
        action = _optimize_action(await client.code_actions(uri, 5))
        if part in action.title:
            return action
        await asyncio.sleep(0.05)
    raise AssertionError(f"the Optimize action is titled {action.title!r}, expected {part!r}")


async def _optimize(client, uri: str, title_part: str = "") -> list[str]:
    """Clicks Optimize on ``uri``'s kernel (once its title holds ``title_part``); the job's
    progress messages once it ended."""
    started = await client.run((await _titled(client, uri, title_part)).command)
    assert started["ok"], started
    await client.wait_for(lambda: _ended(client, started["token"]), timeout=120,
                          what="the optimization")
    return [p.message for p in client.progress_reports[started["token"]]]


@pytest.mark.asyncio
async def test_an_untrusted_workspace_sends_no_key_and_says_which_file_set_what(tmp_path):
    with FakeOpenAI() as fake:
        kernel, conf = _project(tmp_path, fake.url)
        async with editor(tmp_path, env={"GITHUB_TOKEN": SECRET}) as client:
            messages = await _optimize(client, client.open(kernel))
            warnings = [m.message for m in client.messages
                        if m.type == types.MessageType.Warning]
        assert fake.requests == []
    assert "proposer: the built-in passes (no LLM is configured)" in messages
    expected = (f"cudalens: {conf} [agent]: ignored base_url = '{fake.url}', api_key_env = "
                f"'GITHUB_TOKEN' and model = '{MODEL}': this project file is not trusted")
    assert [w for w in warnings if w.startswith(expected)] != [], warnings
    assert any("to trust it, trust the workspace (VS Code: 'Workspaces: Manage Workspace "
               "Trust'; other editors: set cudalens.workspaceTrusted to true)" in w
               for w in warnings), warnings
    assert all(SECRET not in w for w in warnings)


@pytest.mark.asyncio
async def test_a_project_file_above_the_workspace_folder_is_not_read(tmp_path):
    with FakeOpenAI() as fake:
        _, conf = _project(tmp_path, fake.url)
        workspace = tmp_path / "a"
        trusted = {**TEST_SETTINGS, "workspaceTrusted": True}
        async with editor(workspace, settings=trusted, env={"GITHUB_TOKEN": SECRET}) as client:
            messages = await _optimize(client, client.open(workspace / "b" / "saxpy.cu"))
            shown = [m.message for m in client.messages]
        assert fake.requests == []
    assert "proposer: the built-in passes (no LLM is configured)" in messages
    assert not any(str(conf) in m for m in shown), shown


@pytest.mark.asyncio
async def test_a_trusted_workspace_and_trust_granted_later_send_to_the_configured_server(
        tmp_path):
    # the model is not served there: `auto` probes, then falls back (only the probe is sent)
    with FakeOpenAI(models=("nothing-served",)) as fake:
        kernel, conf = _project(tmp_path, fake.url)
        async with editor(tmp_path, env={"GITHUB_TOKEN": SECRET}) as client:
            uri = client.open(kernel)
            await _optimize(client, uri)
            assert fake.requests == []
            # what the VS Code extension sends when trust is granted (onDidGrantWorkspaceTrust)
            client.set_configuration({**TEST_SETTINGS, "workspaceTrusted": True},
                                     section="cudalens")
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings=None))
            messages = await _optimize(client, uri, f"LLM {MODEL} at {fake.url}")
        assert fake.requests == [PROBE]
        fake.requests.clear()
        from harness import SERVER_COMMAND
        log = tmp_path / "server.log"
        async with editor(tmp_path, settings={**TEST_SETTINGS, "workspaceTrusted": True},
                          env={"GITHUB_TOKEN": SECRET},
                          command=SERVER_COMMAND + ["--log-file", str(log)]) as client:
            await _optimize(client, client.open(kernel), f"LLM {MODEL} at {fake.url}")
        assert fake.requests == [PROBE]
    layer = f"{conf} [agent]"
    assert (f"LLM configuration for saxpy: model '{MODEL}' from {layer}; base_url "
            f"'{fake.url}' from {layer}; api_key_env 'GITHUB_TOKEN' from {layer}") \
        in log.read_text()
    assert any(m.startswith(f"proposer: the built-in passes (the LLM {MODEL} at {fake.url} "
                            f"cannot be used: ") for m in messages if m), messages


@pytest.mark.asyncio
async def test_without_a_runner_a_trusted_configuration_sends_nothing_either(tmp_path):
    # the live runner client (no replay) at a closed port: the job fails before any request
    # goes to the model's server
    from harness import SERVER_COMMAND
    live = [c for c in SERVER_COMMAND if c not in ("--runner-factory", "replay_runner:make_client")]
    with FakeOpenAI() as fake:
        kernel, _ = _project(tmp_path, fake.url)
        settings = {**TEST_SETTINGS, "workspaceTrusted": True, "profile": False,
                    "runner": {"url": "http://127.0.0.1:9", "token": "t" * 32}}
        async with editor(tmp_path, settings=settings, env={"GITHUB_TOKEN": SECRET},
                          command=live) as client:
            messages = await _optimize(client, client.open(kernel), f"LLM {MODEL} at {fake.url}")
            errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
        assert fake.requests == []
    assert not any((m or "").startswith("proposer:") for m in messages), messages
    assert errors == ["cudalens: optimizing saxpy failed: no GPU runner can be used: cannot "
                      "reach the GPU runner at http://127.0.0.1:9: [Errno 111] Connection refused"]
