"""Applying a candidate that needs another launch from the editor: the lens says how it runs
under the program's launch, the diff shows the host-side edit, and apply sends the kernel,
its launch sites and the spec in one versioned workspace edit; where a launch cannot be
rewritten, apply asks first (``window/showMessageRequest``) and applies only on "Apply
anyway".

The server's runner is ``launch_fakes.LaunchAwareClient`` (the warp-per-row winner fails under
the user's launch, as on the GPU), started with ``--runner-factory launch_fakes:make_client``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from lsprotocol import types

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from harness import ROOT, editor  # noqa: E402

pytestmark = pytest.mark.asyncio

HOST = ROOT / "examples" / "host" / "layernorm"
LAUNCHER = ROOT / "tests" / "data" / "launch" / "launcher"
COMMAND = [sys.executable, "-m", "cudalens.cli_lsp", "--runner-factory",
           "launch_fakes:make_client", "--log-level", "info"]
ENV = {"PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT), str(ROOT / "tests"),
                                      str(ROOT / "tests" / "data" / "lsp")])}
SETTINGS = {"check": {"enabled": False, "debounceMs": 50},
            "budget": {"candidates": 8, "repetitions": 5}, "proposer": "builtin"}
WINNER = "restrict warp-per-row unroll=4 block=128"
NEW = "block = 128, grid = ceil_div(rows, 4)"


def _workspace(tmp_path: Path, source: Path) -> Path:
    dest = tmp_path / "ws"
    shutil.copytree(source, dest)
    return dest


async def _optimized(client, uri: str) -> list[types.CodeLens]:
    lenses = await client.code_lenses(uri)
    opt = next(lens for lens in lenses if lens.command.command == "cudalens.optimize")
    started = await client.run(opt.command)
    assert started["ok"], started

    async def offered():
        got = await client.code_lenses(uri)
        return got if any("faster candidate" in lens.command.title for lens in got) else None

    return await client.wait_for(offered, timeout=120, what="a candidate on offer")


def _command(lenses, name: str) -> types.Command:
    return next(lens.command for lens in lenses if lens.command.command == name)


async def test_apply_rewrites_the_launch_site_in_the_same_versioned_edit(tmp_path):
    ws = _workspace(tmp_path, HOST)
    async with editor(ws, settings=SETTINGS, env=ENV, command=COMMAND) as client:
        uri = client.open(ws / "layernorm.cu")
        main_uri = client.open(ws / "main.cu")  # open: its edit carries its version
        lenses = await _optimized(client, uri)
        diff_title = _command(lenses, "cudalens.showDiff").title
        assert diff_title == (f"14.80x faster candidate: show diff (needs a new launch: 14.80x "
                              f"with {NEW})")

        shown = await client.run(_command(lenses, "cudalens.showDiff"))
        assert "-    layernorm_rows<<<(n_rows + threads - 1) / threads, threads>>>(d_x, " \
            "d_gamma, d_beta, d_y,\n" in shown["host"]
        assert "+    layernorm_rows<<<(n_rows + 4 - 1) / 4, 128>>>(d_x, d_gamma, d_beta, d_y,\n" \
            in shown["host"]
        assert shown["host"].startswith("--- a/main.cu\n+++ b/main.cu\n")
        assert "main.cu" not in shown["diff"]
        written = Path(shown["path"]).read_text()
        assert f"# under your launch: needs a new launch: 14.80x with {NEW}\n" in written
        assert written.endswith(shown["diff"] + shown["host"])

        answer = await client.run(_command(lenses, "cudalens.apply"))
        assert answer["ok"] and answer["applied"], answer
        assert answer["launches"] == [{
            "path": str((ws / "main.cu").resolve()), "line": 27, "column": 18,
            "old": "<<<(n_rows + threads - 1) / threads, threads>>>",
            "new": "<<<(n_rows + 4 - 1) / 4, 128>>>"}]
        (edit,) = client.applied_edits
        changes = edit.edit.document_changes
        assert [(c.text_document.uri, c.text_document.version) for c in changes] == [
            (uri, 1), (main_uri, 1), ((ws / "layernorm.cu.spec").as_uri(), None)]
        assert "// One warp per row" in client.text(uri)
        assert client.text(main_uri) == (HOST / "main.cu").read_text().replace(
            "<<<(n_rows + threads - 1) / threads, threads>>>", "<<<(n_rows + 4 - 1) / 4, 128>>>")
        assert client.doc_version(main_uri) == 2
        assert "grid = ceil_div(rows, 4)" in (ws / "layernorm.cu.spec").read_text()
        assert "rewrote the launch at main.cu:28:19." in client.messages[-1].message


async def test_a_launch_that_cannot_be_rewritten_asks_first(tmp_path):
    ws = _workspace(tmp_path, LAUNCHER)
    async with editor(ws, settings=SETTINGS, env=ENV, command=COMMAND) as client:
        asked: list[types.ShowMessageRequestParams] = []
        reply = ["Cancel"]

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def _ask(ls, params: types.ShowMessageRequestParams):
            asked.append(params)
            return types.MessageActionItem(title=reply[0])

        uri = client.open(ws / "layernorm.cu")
        lenses = await _optimized(client, uri)
        answer = await client.run(_command(lenses, "cudalens.apply"))
        assert answer["ok"] is False and answer["applied"] is False
        assert answer["launch"] == {"block": ["128"], "grid": ["ceil_div(rows, 4)"],
                                    "shared": "0"}
        assert answer["sites"] == [{
            "path": str((ws / "launcher.cu").resolve()), "line": 8, "column": 4,
            "reason": "the launch passes 1 argument(s) where layernorm_rows has 7 parameter(s) "
                      "(a parameter pack or a macro): the sizes cannot be read from it"}]
        (question,) = asked
        assert question.type == types.MessageType.Warning
        assert [a.title for a in question.actions] == ["Apply anyway", "Cancel"]
        assert question.message.startswith(
            f"cudalens: {WINNER} must be launched with {NEW}, and it is wrong under your "
            f"launch; these launches of layernorm_rows cannot be rewritten: launcher.cu:9:5: "
            f"layernorm_rows<<<(rows + 255) / 256, 256>>>(args...)")
        assert client.applied_edits == []
        assert "// One warp per row" not in client.text(uri)

        reply[0] = "Apply anyway"
        answer = await client.run(_command(lenses, "cudalens.apply"))
        assert answer["ok"] and answer["applied"], answer
        assert "// One warp per row" in client.text(uri)
        assert (ws / "launcher.cu").read_text() == (LAUNCHER / "launcher.cu").read_text()
        assert "change the launch at launcher.cu:9:5 yourself." in client.messages[-1].message
