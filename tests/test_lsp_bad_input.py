"""``cudalens lsp`` under input a client should not send but some do (issue 11, item 7): a lone
surrogate in a change, a change for a document that was never opened, ``null`` for
window/showDocument, a huge document, ``exit`` without ``shutdown``, malformed requests at
the default log level. Each is driven end to end with the pytest-lsp harness.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from harness import copy_example, editor, uri  # noqa: E402

from cudalens.lsp import commands as cmd  # noqa: E402
from cudalens.lsp.documents import MAX_ANALYZED_BYTES  # noqa: E402
from cudalens.lsp.incoming import without_lone_surrogates  # noqa: E402

asyncio_test = pytest.mark.asyncio

FRESH = ["Optimize", "Capture a real launch"]  # the lenses of a kernel never optimized


def _command(log: Path) -> list[str]:
    """The server at its default log level, logging to ``log`` too."""
    return [sys.executable, "-m", "cudalens.cli_lsp", "--runner-factory",
            "model_runner:make_client", "--log-file", str(log)]


def _errors(client) -> list[str]:
    return [m.message for m in client.messages if m.type == types.MessageType.Error]


def test_lone_surrogates_become_one_replacement_character_each():
    text = "a\ud800b\udfffc\U0001F600"
    fixed, count = without_lone_surrogates(text)
    assert (fixed, count) == ("a\ufffdb\ufffdc\U0001F600", 2)
    assert len(fixed) == len(text)  # code points, and UTF-16 units: both unchanged
    assert len(fixed.encode("utf-16-le")) == len(text.encode("utf-16-le", "surrogatepass"))
    assert without_lone_surrogates("plain") == ("plain", 0)


@asyncio_test
async def test_a_lone_surrogate_does_not_break_later_requests(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path) as client:
        u = client.open(path)
        lens, _capture = await client.code_lenses(u)
        line = lens.range.start.line
        client.change(u, "// \ud800 x\n" + client.text(u))
        lenses = await client.code_lenses(u)
        assert [(lens.range.start.line, lens.command.title) for lens in lenses] == [
            (line + 1, "Optimize"), (line + 1, "Capture a real launch")]
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=u), position=lenses[0].range.start))
        assert hover is not None
        # an incremental change after the surrogate still applies
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(
                uri=u, version=client.doc_version(u) + 1),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(0, 5), types.Position(0, 6)),
                text="\ud800\n")]))
        lenses = await client.code_lenses(u)
        assert [(lens.range.start.line, lens.command.title) for lens in lenses] == [
            (line + 2, "Optimize"), (line + 2, "Capture a real launch")]
        assert _errors(client) == []
        warned = [m.message for m in client.log_messages if "surrogate" in m.message]
        assert warned == [f"cudalens: textDocument/didChange for {u} carried 1 lone UTF-16 "
                          "surrogate(s), which are not text; each is kept as U+FFFD"] * 2


@asyncio_test
async def test_a_change_for_a_document_never_opened_is_logged_not_popped_up(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path) as client:
        stray = uri(tmp_path / "never_opened.cu")
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=stray, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="x")]))
        u = client.open(path)
        assert [lens.command.title for lens in await client.code_lenses(u)] == FRESH
        logged = await client.wait_for(lambda: [m.message for m in client.log_messages
                                                if "never_opened.cu" in m.message],
                                       what="a log message about the stray change")
        assert logged == [f"cudalens: ignored textDocument/didChange for {stray}: the document "
                          "is not open (the client sent no didOpen for it)"]
        assert client.messages == []  # no pop-up


@asyncio_test
async def test_show_document_answered_with_null_answers_open_spec_and_shuts_down(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    spec = tmp_path / "saxpy.cu.spec"
    spec.write_text(spec.read_text().replace("inout y", "inot y"))
    async with editor(tmp_path) as client:
        client.protocol.fm.features[types.WINDOW_SHOW_DOCUMENT] = lambda params: None
        u = client.open(path)
        lenses = await client.code_lenses(u)
        assert lenses[0].command.command == cmd.OPEN_SPEC
        result = await asyncio.wait_for(client.run(lenses[0].command), 10)
        assert result == {"shown": False,
                          "reason": "the client answered window/showDocument with null"}
    # leaving the block shut the server down: shutdown answered, exit status 0
    assert client._server.returncode == 0
    assert client.error is None


@asyncio_test
async def test_shutdown_while_show_document_is_unanswered_is_answered(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    spec = tmp_path / "saxpy.cu.spec"
    spec.write_text(spec.read_text().replace("inout y", "inot y"))
    asked, release = asyncio.Event(), asyncio.Event()

    async def answer_late(params):
        asked.set()
        await release.wait()
        return types.ShowDocumentResult(success=True)

    async with editor(tmp_path) as client:
        client.protocol.fm.features[types.WINDOW_SHOW_DOCUMENT] = answer_late
        u = client.open(path)
        lenses = await client.code_lenses(u)
        pending = asyncio.ensure_future(client.run(lenses[0].command))
        await asyncio.wait_for(asked.wait(), 10)
        assert await asyncio.wait_for(client.shutdown_async(None), 10) is None
        # shutdown cancelled the openSpec that waited for the client: answered, not left
        with pytest.raises(JsonRpcException) as info:
            await asyncio.wait_for(pending, 5)
        assert info.value.code == -32800  # RequestCancelled
        release.set()  # the late answer is for a request the server no longer waits for
        client.shutdown_session = _exit_only(client)
    assert client._server.returncode == 0
    assert client.error is None


def _exit_only(client):
    async def exit_() -> None:
        client.exit(None)
        await asyncio.wait_for(client._server.wait(), 20)
    return exit_


@asyncio_test
async def test_exit_without_shutdown_exits_1(tmp_path):
    async with editor(tmp_path) as client:
        client.protocol.notify(types.EXIT)
        await asyncio.wait_for(client._server.wait(), 20)
        assert client._server.returncode == 1
        client.shutdown_session = _already_gone


async def _already_gone():
    return None


@asyncio_test
async def test_shutdown_then_exit_exits_0(tmp_path):
    async with editor(tmp_path) as client:
        pass
    assert client._server.returncode == 0


async def _raw_request(client, msg_id: str, method: str, params) -> JsonRpcException:
    """Sends a request as raw JSON (the client's own types refuse malformed params) and
    returns the error it is answered with."""
    answer = asyncio.get_running_loop().create_future()
    client.protocol._request_futures[msg_id] = answer
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method,
                                "params": params})
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(answer, 10)
    return info.value


def _logged(log: Path, at: tuple[str, ...] = ("WARNING", "ERROR", "CRITICAL")) -> list[str]:
    """``LEVEL name: message`` of each record at one of ``at`` (the timestamp cut off);
    a line that is no record's first line (a traceback's) is kept whole."""
    out = []
    for line in log.read_text(encoding="utf-8").splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4 and re.fullmatch(r"\d\d:\d\d:\d\d,\d+", parts[1]):
            if parts[2] in at:
                out.append(f"{parts[2]} {parts[3]}")
        else:
            out.append(line)
    return out


@asyncio_test
async def test_malformed_requests_log_one_line_each_at_the_default_level(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    log = tmp_path / "server.log"
    async with editor(tmp_path, command=_command(log)) as client:
        u = client.open(path)
        error = await _raw_request(client, "raw-1", "textDocument/hover",
                                   {"textDocument": {"uri": u},
                                    "position": {"line": -1, "character": 0}})
        assert error.code == -32602
        error = await _raw_request(client, "raw-2", "textDocument/codeLens", None)
        assert error.code == -32602
        with pytest.raises(JsonRpcException) as info:
            await client.workspace_execute_command_async(types.ExecuteCommandParams(
                command=cmd.OPTIMIZE, arguments=[{"uri": u, "kernel": "saxpy",
                                                  "version": "x"}]))
        assert info.value.code == -32602
        assert [lens.command.title for lens in await client.code_lenses(u)] == FRESH
    logged = _logged(log)
    assert logged[:2] == [
        "WARNING cudalens.lsp.protocol: textDocument/hover: invalid params: Position.line "
        "should be in range [0:2147483647], but was -1. @ $.params.position",
        "WARNING cudalens.lsp.protocol: textDocument/codeLens: invalid params: invalid value "
        "for type, expected CodeLensParams @ $.params"]
    assert len(logged) == 3, logged
    assert re.fullmatch(r"WARNING cudalens\.lsp\.protocol: request \S+ refused: "
                        r"cudalens\.optimize: expected an integer 'version', found 'x'",
                        logged[2]), logged[2]


@asyncio_test
async def test_a_huge_document_is_not_analyzed_and_does_not_stall_others(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    big = tmp_path / "big.cu"
    kernel = path.read_text(encoding="utf-8")
    copies = MAX_ANALYZED_BYTES // len(kernel) + 2
    big.write_text("".join(kernel.replace("saxpy", f"saxpy{i}") for i in range(copies)),
                   encoding="utf-8")
    async with editor(tmp_path) as client:
        u = client.open(path)
        assert [lens.command.title for lens in await client.code_lenses(u)] == FRESH
        b = client.open(big)
        start = time.perf_counter()
        assert [lens.command.title for lens in await client.code_lenses(u)] == FRESH
        assert time.perf_counter() - start < 2.0
        assert await client.code_lenses(b) == []
        size = big.stat().st_size
        warned = await client.wait_for(lambda: [m.message for m in client.messages
                                                if "big.cu" in m.message],
                                       what="the size warning")
        assert warned == [f"cudalens: big.cu is {size / 1e6:.1f} MB; documents above "
                          f"{MAX_ANALYZED_BYTES / 1e6:.0f} MB are not analyzed (no code lenses, "
                          "hints, hover or compile check)"]
