"""The server under bad input: every request is answered, bad params are -32602 with a
one-line message, a broken spec file is pointed at, a kernel stays visible while its body is
being typed, and diagnostics are not tagged with a version they were not computed for.

In-process tests feed raw JSON-RPC bodies through the server's protocol the way pygls's
read loop does (``json.loads(body, object_hook=structure_message)`` then
``handle_message``); end-to-end tests drive ``cudalens lsp`` with the pytest-lsp harness.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from harness import copy_example, editor  # noqa: E402

from cudalens.lsp import commands as cmd  # noqa: E402
from cudalens.lsp.capture_action import CAPTURE, TITLE as CAPTURE_TITLE  # noqa: E402
from cudalens.lsp.code_lens import code_lenses  # noqa: E402
from cudalens.lsp.diagnostics import publish_version  # noqa: E402
from cudalens.lsp.documents import analyze, path_to_uri  # noqa: E402
from cudalens.lsp.editing import EDITING, held, is_regression  # noqa: E402
from cudalens.lsp.results import KernelStatus  # noqa: E402
from cudalens.lsp.server import build_server  # noqa: E402

EXAMPLES = Path(__file__).absolute().parents[1] / "examples"
SAXPY = (EXAMPLES / "saxpy.cu").read_text(encoding="utf-8")
BODY = "y[i] = a * x[i] + y[i];"
MID_EDITS = {"cut expression": SAXPY.replace(BODY, "y[i] = a * x[i] + "),
             "open parens": SAXPY.replace("{\n    int i", "{\n    int i = ((((", 1)}


# -- raw JSON-RPC, in process ---------------------------------------------------------------

class _Capture:
    def __init__(self):
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    def messages(self) -> list[dict]:
        out, rest = [], self.data
        while rest:
            head, _, rest = rest.partition(b"\r\n\r\n")
            length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
            out.append(json.loads(rest[:length]))
            rest = rest[length:]
        return out


def _feed(message: dict) -> list[dict]:
    """What the server writes back for one raw message."""
    server = build_server(lambda settings: None)
    out = _Capture()
    server.protocol.set_writer(out)
    body = json.dumps(message).encode()
    server.protocol.handle_message(json.loads(body, object_hook=server.protocol.structure_message))
    return out.messages()


def _pos(line, character):
    return {"line": line, "character": character}


DOC = {"uri": "file:///w/saxpy.cu"}
BAD_REQUESTS = [
    ("textDocument/hover", {"textDocument": DOC, "position": _pos(-1, -1)},
     "textDocument/hover: invalid params: Position.line should be in range [0:2147483647], "
     "but was -1. @ $.params.position"),
    ("textDocument/codeAction", {"textDocument": DOC, "range": {"start": _pos(-5, 0),
                                                                "end": _pos(-1, 0)},
                                 "context": {"diagnostics": []}},
     "textDocument/codeAction: invalid params: Position.line should be in range [0:2147483647], "
     "but was -5. @ $.params.range.start; Position.line should be in range [0:2147483647], but "
     "was -1. @ $.params.range.end"),
    ("textDocument/hover", None,
     "textDocument/hover: invalid params: invalid value for type, expected HoverParams @ "
     "$.params"),
    ("textDocument/hover", {"textDocument": DOC, "position": {"line": "a", "character": None}},
     "textDocument/hover: invalid params: invalid value for type, expected int @ "
     "$.params.position.line; invalid value for type, expected int @ $.params.position.character"),
]


@pytest.mark.parametrize("method,params,message", BAD_REQUESTS)
def test_request_with_invalid_params_is_answered_with_invalid_params(method, params, message):
    sent = _feed({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    assert sent == [{"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": message}}]


def test_notification_with_invalid_params_is_logged_not_popped_up():
    sent = _feed({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {}})
    assert [m["method"] for m in sent] == ["window/logMessage"]
    assert sent[0]["params"]["type"] == types.MessageType.Warning.value
    assert sent[0]["params"]["message"].startswith(
        "cudalens: ignored textDocument/didOpen: invalid params: ")
    assert sent[0]["params"]["message"].endswith("required field missing @ $.params.textDocument")


def test_body_that_is_not_json_is_answered_with_a_parse_error():
    server = build_server(lambda settings: None)
    out = _Capture()
    server.protocol.set_writer(out)
    with pytest.raises(json.JSONDecodeError) as info:  # what pygls's read loop meets
        json.loads(b"{not json}", object_hook=server.protocol.structure_message)
    server.report_server_error(info.value, JsonRpcException)
    assert out.messages() == [{"jsonrpc": "2.0", "id": None, "error": {
        "code": -32700, "message": "parse error: the message body is not JSON: Expecting "
                                   "property name enclosed in double quotes: line 1 column 2 "
                                   "(char 1)"}}]


# -- command arguments ----------------------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    ((), "cudalens.optimize: expected one argument, an object with uri and kernel, found []"),
    ((1, 2), "cudalens.optimize: expected one argument, an object with uri and kernel, "
             "found [1, 2]"),
    (({"uri": "file:///a.cu"},), "cudalens.optimize: expected a string 'kernel' in the "
                                 "argument, found None"),
    (({"uri": "file:///a.cu", "kernel": "k", "version": "x"},),
     "cudalens.optimize: expected an integer 'version', found 'x'"),
])
def test_bad_command_arguments_are_invalid_params(args, message):
    with pytest.raises(cmd.CommandError) as info:
        cmd.parse_args(cmd.OPTIMIZE, args)
    assert (info.value.code, info.value.message, info.value.data) == (-32602, message, None)


# -- held kernels while typing, spec-file lenses (in process) -------------------------------

def _snap(path: Path, text: str, version: int):
    return analyze(path_to_uri(path), path, version, text, "utf-16")


def _status(view) -> KernelStatus:
    return KernelStatus(view=view, key="", current=None, stale=None, offer=None)


@pytest.mark.parametrize("case", sorted(MID_EDITS))
def test_mid_edit_parse_holds_the_last_good_kernels(tmp_path, case):
    path = tmp_path / "saxpy.cu"
    good = _snap(path, SAXPY, 1)
    broken_text = "// a new first line\n" + MID_EDITS[case]
    broken = _snap(path, broken_text, 2)
    assert broken.kernels == () and broken.source.error_ranges  # what the parser gives
    assert is_regression(good, broken)
    h = held(good, broken)
    assert [v.name for v in h.kernels] == ["saxpy"]
    assert h.lines == {"saxpy": 4}  # followed the definition one line down
    assert h.kernels[0].spec is not None  # inferred: it could be optimized, but not now
    lenses = code_lenses(broken, [], {}, h, [_status(h.kernels[0])], {})
    assert [(lens.range.start.line, lens.command.title, lens.command.command)
            for lens in lenses] == [(4, f"saxpy {EDITING}", "")]


def test_clean_parse_or_no_lost_kernel_holds_nothing(tmp_path):
    path = tmp_path / "saxpy.cu"
    good = _snap(path, SAXPY, 1)
    assert held(good, _snap(path, SAXPY.replace("y[i];", "2 * y[i];"), 2)) is None
    # the kernel deleted cleanly: no syntax error, so it is gone, not held
    assert held(good, _snap(path, SAXPY[SAXPY.index("void launch"):], 3)) is None


def test_spec_with_errors_lens_points_at_the_spec_file(tmp_path):
    path = tmp_path / "saxpy.cu"
    spec = tmp_path / "saxpy.cu.spec"
    spec.write_text((EXAMPLES / "saxpy.cu.spec").read_text().replace("inout y", "inot y"))
    snap = _snap(path, SAXPY, 1)
    assert snap.kernels[0].spec is None and snap.kernels[0].spec_error
    statuses = [_status(v) for v in snap.kernels]
    opening = code_lenses(snap, statuses, {}, open_spec=True)
    assert [(lens.command.title, lens.command.command, lens.command.arguments)
            for lens in opening] == [("harness spec has errors: see saxpy.cu.spec",
                                      cmd.OPEN_SPEC, [{"uri": path_to_uri(spec)}])]
    plain = code_lenses(snap, statuses, {}, open_spec=False)
    assert [(lens.command.title, lens.command.command, lens.command.arguments)
            for lens in plain] == [("harness spec has errors: see saxpy.cu.spec", "", None)]
    spec.unlink()
    gone = code_lenses(_snap(path, SAXPY, 2), statuses, {}, open_spec=True)
    assert gone[0].command.title == "no harness spec: see the diagnostic"


def test_diagnostics_of_an_older_version_are_published_without_a_version():
    old = types.Diagnostic(range=types.Range(types.Position(3, 0), types.Position(3, 4)),
                           message="identifier \"zz\" is undefined")
    assert publish_version((4, [old]), 5) is None
    assert publish_version((5, [old]), 5) == 5
    assert publish_version((4, []), 5) == 5  # nothing old in the set
    assert publish_version(None, 5) == 5


# -- end to end -----------------------------------------------------------------------------

asyncio_test = pytest.mark.asyncio


@asyncio_test
async def test_server_answers_bad_requests_and_commands(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path) as client:
        u = client.open(path)
        # sent as raw JSON (the client's own types refuse a negative line)
        answer = asyncio.get_running_loop().create_future()
        client.protocol._request_futures["raw-1"] = answer
        client.protocol._send_data({"jsonrpc": "2.0", "id": "raw-1", "method": "textDocument/hover",
                                    "params": {"textDocument": {"uri": u},
                                               "position": {"line": -1, "character": -1}}})
        with pytest.raises(JsonRpcException) as info:
            await asyncio.wait_for(answer, 10)
        assert info.value.code == -32602
        assert info.value.message == (
            "textDocument/hover: invalid params: Position.line should be in range "
            "[0:2147483647], but was -1. @ $.params.position")
        for args, found in (([], "found []"), ([{"uri": u, "kernel": "saxpy", "version": "x"}],
                                               "found 'x'")):
            with pytest.raises(JsonRpcException) as info:
                await client.workspace_execute_command_async(types.ExecuteCommandParams(
                    command=cmd.OPTIMIZE, arguments=args))
            assert info.value.code == -32602
            assert info.value.message.endswith(found) and "\n" not in info.value.message
            assert info.value.data is None  # no traceback
        # the server is still serving
        lenses = await client.code_lenses(u)
        assert [lens.command.title for lens in lenses] == ["Optimize", "Capture a real launch"]


@asyncio_test
async def test_lenses_survive_a_mid_edit_parse_and_actions_are_refused(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path) as client:
        u = client.open(path)
        assert [(lens.command.title, lens.command.command)
                for lens in await client.code_lenses(u)] == [("Optimize", cmd.OPTIMIZE),
                                                             (CAPTURE_TITLE, CAPTURE)]
        client.change(u, MID_EDITS["cut expression"])
        lenses = await client.code_lenses(u)
        assert [(lens.range.start.line, lens.command.title, lens.command.command)
                for lens in lenses] == [(3, f"saxpy {EDITING}", "")]
        assert [a for a in await client.code_actions(u, 5)
                if a.command and a.command.command in (cmd.OPTIMIZE, cmd.APPLY)] == []
        result = await client.run(cmd.command("Optimize", cmd.OPTIMIZE, cmd.KernelArgs(
            uri=u, kernel="saxpy", version=client.doc_version(u))))
        assert result["ok"] is False
        assert result["reason"] == ("saxpy.cu does not parse at version 2 (editing): saxpy is "
                                    "shown as last parsed at version 1; finish the edit and try "
                                    "again")
        client.change(u, SAXPY.replace(BODY, "y[i] = a * x[i] + 2 * y[i];"))
        assert [(lens.command.title, lens.command.command)
                for lens in await client.code_lenses(u)] == [("Optimize", cmd.OPTIMIZE),
                                                             (CAPTURE_TITLE, CAPTURE)]


@asyncio_test
async def test_broken_spec_lens_opens_the_spec(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    spec = tmp_path / "saxpy.cu.spec"
    spec.write_text(spec.read_text().replace("inout y", "inot y"))
    async with editor(tmp_path) as client:
        u = client.open(path)
        lenses = await client.code_lenses(u)
        assert [(lens.command.title, lens.command.command) for lens in lenses] == [
            ("harness spec has errors: see saxpy.cu.spec", cmd.OPEN_SPEC),
            (CAPTURE_TITLE, CAPTURE)]
        assert await client.run(lenses[0].command) == {"shown": True}
        assert [(d.uri, d.take_focus) for d in client.shown_documents] == [
            (path_to_uri(spec), True)]
    shutil.rmtree(tmp_path / ".cudalens", ignore_errors=True)
