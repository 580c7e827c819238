"""The language server's compute-sanitizer features with a live runner process
(``live_fake_runner``; its compute-sanitizer is tests/data/runner/fake_compute_sanitizer.py,
which reports a race at each line holding ``@race`` and an out-of-bounds read at each ``@oob``):
the "Check this kernel for races and memory errors" code action puts each finding on its line
as a diagnostic (source ``compute-sanitizer``), an edit drops them, and Optimize refuses an
original with a race unless the ``sanitize`` setting is off."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lsprotocol import types

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))
sys.path.insert(0, str(Path(__file__).absolute().parent))

from harness import copy_example, uri  # noqa: E402
from live_fake_runner import fake_runner_process  # noqa: E402
from test_lsp_live_runner import _server, _settings  # noqa: E402
from test_lsp_optimize import action, ended  # noqa: E402

pytestmark = pytest.mark.asyncio

TOKEN = "lsp-live-runner-token-0123456789"  # the token test_lsp_live_runner's settings send
TITLE = "Check this kernel for races and memory errors"


def _racy(folder: Path) -> Path:
    path = copy_example(folder, "saxpy.cu")
    text = path.read_text()
    text = text.replace("        y[i] = a * x[i] + y[i];", "        y[i] = a * x[i] + y[i]; // @race")
    text = text.replace("    if (i < n) {", "    if (i < n) { // @oob")
    path.write_text(text)
    return path


def _sanitizer(client, u: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics_for(u) if d.source == "compute-sanitizer"]


async def test_the_check_action_shows_each_finding_at_its_line(tmp_path):
    work = tmp_path / "work"
    path = _racy(work)
    with fake_runner_process(tmp_path, TOKEN) as url:
        async with _server(work, _settings(url), tmp_path / "server.log") as client:
            doc = client.open(path)
            actions = await client.code_actions(doc, 5)
            found = [a for a in actions if a.title == TITLE]
            assert len(found) == 1 and found[0].kind == "source.cudalens.sanitize"
            assert list(found[0].command.arguments) == [{"uri": doc, "kernel": "saxpy",
                                                   "version": 1}]
            started = await client.run(found[0].command)
            assert started["ok"], started
            await client.wait_for(lambda: len(_sanitizer(client, doc)) == 2, timeout=60,
                                  what="the sanitizer's diagnostics")
            diags = sorted(_sanitizer(client, doc), key=lambda d: d.range.start.line)
            end = await client.wait_for(lambda: ended(client, started["token"]), timeout=10,
                                        what="the check's end")
            # an edit: the lines that were run may not be these any more
            client.change(doc, client.text(doc) + "\n")
            await client.wait_for(lambda: _sanitizer(client, doc) == [], timeout=20,
                                  what="the diagnostics dropped after the edit")
    oob, race = diags
    assert (oob.range.start.line, oob.range.start.character) == (6, 4)   # "    if (i < n) {"
    assert (oob.range.end.line, oob.range.end.character) == (6, len("    if (i < n) { // @oob"))
    assert oob.severity == types.DiagnosticSeverity.Error and oob.code == "out-of-bounds read"
    assert oob.message == ("memcheck: out-of-bounds read: Invalid __global__ read of size 4 "
                           "bytes (thread (7,0,0), block (2,0,0))")
    assert (race.range.start.line, race.range.start.character) == (7, 8)
    assert race.code == "race" and race.severity == types.DiagnosticSeverity.Error
    assert race.message == ("racecheck: race: Race reported between Write access and Read "
                            "access; 96 hazards")
    assert end[0].message == "saxpy: 2 findings (2 errors), shown as diagnostics"


async def test_optimize_refuses_a_racy_original_and_goes_on_with_the_check_off(tmp_path):
    work = tmp_path / "work"
    path = _racy(work)
    with fake_runner_process(tmp_path, TOKEN) as url:
        async with _server(work, _settings(url), tmp_path / "server.log") as client:
            doc = client.open(path)
            found = action(await client.code_actions(doc, 4), "cudalens.optimize")
            started = await client.run(found.command)
            end = await client.wait_for(lambda: ended(client, started["token"]), timeout=60,
                                        what="the refused optimization")
            errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
            shown = await client.wait_for(lambda: _sanitizer(client, doc), timeout=20,
                                          what="the refusal's findings as diagnostics")
        assert sorted((d.range.start.line, d.code) for d in shown) == [
            (6, "out-of-bounds read"), (7, "race")]
        assert end[0].message == "saxpy: failed"
        [error] = errors
        assert error.startswith("cudalens: optimizing saxpy failed: the original saxpy is not "
                                "used as a reference: compute-sanitizer found 2 problem(s)")
        assert f"{path}:7:5: error: memcheck: out-of-bounds read" in error
        assert f"{path}:8:9: error: racecheck: race" in error
        off = {**_settings(url), "sanitize": False}
        async with _server(work, off, tmp_path / "server2.log") as client:
            doc = client.open(path)
            found = action(await client.code_actions(doc, 4), "cudalens.optimize")
            started = await client.run(found.command)
            end = await client.wait_for(lambda: ended(client, started["token"]), timeout=60,
                                        what="the optimization")
            # the stored run says the original was not checked, and why (the report shows it)
            page = (await client.run(types.Command(
                title="report", command="cudalens.kernelReport",
                arguments=[{"uri": doc, "kernel": "saxpy"}])))["html"]
    assert end[0].message.startswith("saxpy: best 2.00x (verified)"), end[0].message
    assert ('<p class="bad" data-state="not_run">Not run: the cudalens.sanitize setting is off. '
            'The original was not checked for races and memory errors.</p>') in page
