"""The engine's checks before a runner (``cudalens.engine.preflight``) as the editor shows them:
a bad ``[build]`` table or a file that does not compile is told before any runner is made; the
lens and the hovers say the file does not compile, and no Optimize action is offered until it
is fixed; a failed Optimize stays on the lens and the hover until the next one (pytest-lsp,
real nvcc, the model runner)."""

from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path

import pytest
from lsprotocol import types

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from harness import TEST_SETTINGS, copy_example, editor  # noqa: E402
from model_runner import MADE_LOG_ENV  # noqa: E402
from nvcc_util import needs_nvcc  # noqa: E402

pytestmark = pytest.mark.asyncio

SIGNATURE_LINE = 3  # examples/saxpy.cu: the kernel's name is on line 4
BAD_OPTION = "-Xcompiler=-O3"


def errors(client) -> list[str]:
    return [m.message for m in client.messages if m.type == types.MessageType.Error]


def hover_text(hover: types.Hover) -> str:
    assert isinstance(hover.contents, types.MarkupContent)
    return hover.contents.value


async def test_a_refused_build_table_fails_the_job_before_any_runner_and_stays_on_the_hover(
        tmp_path):
    from cudalens.build import build_for
    from cudalens.errors import CudalensError

    path = copy_example(tmp_path, "saxpy.cu")
    (tmp_path / "cudalens.toml").write_text(f'[build]\noptions = ["{BAD_OPTION}"]\n')
    with pytest.raises(CudalensError) as refused:
        build_for(path)
    why = str(refused.value)
    assert f"'{BAD_OPTION}' is not an option cudalens passes" in why
    made = tmp_path / "runners-made"
    async with editor(tmp_path, env={MADE_LOG_ENV: str(made)}) as client:
        uri = client.open(path)
        started = await client.run(types.Command(
            title="Optimize", command="cudalens.optimize",
            arguments=[{"uri": uri, "kernel": "saxpy"}]))
        assert started["ok"], started
        await client.wait_for(lambda: errors(client), what="the failure")
        assert errors(client) == [f"cudalens: optimizing saxpy failed: {why}"]
        assert not made.exists()  # no runner was made for it
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(SIGNATURE_LINE, 18)))
        text = hover_text(hover)
        day = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
        found = re.search(r"Last \*\*Optimize\*\* failed \((\d{4}-\d\d-\d\d) "
                          r"\d\d:\d\d:\d\d UTC\): (.*)", text)
        assert found is not None, text
        assert found.group(1) == day
        assert found.group(2) == why
        assert text.startswith("**saxpy**: not measured yet\n\n" + found.group(0) + "\n\n")
        # the lens says it too, shortened, and Optimize stays to try again
        lenses = await client.code_lenses(uri)
        kernel = [(lens.command.title, lens.command.command) for lens in lenses
                  if lens.range.start.line == SIGNATURE_LINE]
        shown = why.split("\n")[0]
        assert len(shown) > 60
        assert kernel[:2] == [(f"Optimize failed: {shown[:59].rstrip()}\u2026 (hover for details)",
                               ""), ("Optimize", "cudalens.optimize")], kernel


@needs_nvcc
async def test_a_file_that_does_not_compile_gets_no_optimize_lens_plan_or_runner(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    text = path.read_text().replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + y[i]")
    path.write_text(text)
    made = tmp_path / "runners-made"
    settings = {**TEST_SETTINGS, "check": {"enabled": True, "debounceMs": 0}}
    async with editor(tmp_path, settings, env={MADE_LOG_ENV: str(made)}) as client:
        uri = client.open(path)
        await client.wait_for(lambda: [d for d in client.diagnostics_for(uri)
                                       if d.severity == types.DiagnosticSeverity.Error],
                              what="the compile error", timeout=120)
        error = next(d for d in client.diagnostics_for(uri)
                     if d.severity == types.DiagnosticSeverity.Error)
        line = error.range.start.line + 1
        assert line == 9  # the missing ';' is seen at the closing brace of the if
        where = f'line {line}: expected a ";"'
        body = SIGNATURE_LINE + 2
        assert not [a.title for a in await client.code_actions(uri, body)
                    if a.command and a.command.command == "cudalens.optimize"]
        lenses = await client.code_lenses(uri)
        kernel = [(lens.command.title, lens.command.command) for lens in lenses
                  if lens.range.start.line == SIGNATURE_LINE]
        assert (f"does not compile ({where}): fix it to Optimize", "") in kernel
        assert all(cmd != "cudalens.optimize" for _, cmd in kernel)
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(SIGNATURE_LINE, 18)))
        sections = hover_text(hover).split("\n\n")
        assert f"The file does not compile ({where}): fix it to **Optimize**." in sections
        assert sections[-1] == f"**Optimize plan**: none while the file does not compile ({where})"
        answer = await client.run(types.Command(
            title="Optimize", command="cudalens.optimize",
            arguments=[{"uri": uri, "kernel": "saxpy"}]))
        assert answer == {"ok": False, "reason": (
            f'cannot optimize saxpy: {path}:{line}: expected a ";" ({path} does not compile with '
            f'nvcc for sm_90: 1 error; cudalens check {path} shows them all)')}
        assert not made.exists()
        # fixed, the lens and the action come back once the new text's check has passed
        client.change(uri, text.replace("y[i] = a * x[i] + y[i]", "y[i] = a * x[i] + y[i];"))

        async def optimize_lens():
            lenses = await client.code_lenses(uri)
            return ("Optimize", "cudalens.optimize") in [
                (lens.command.title, lens.command.command) for lens in lenses
                if lens.range.start.line == SIGNATURE_LINE]

        await client.wait_for(optimize_lens, what="the Optimize lens back", timeout=120)
        assert not [d for d in client.diagnostics_for(uri)
                    if d.severity == types.DiagnosticSeverity.Error]
        actions = [a.title for a in await client.code_actions(uri, body)
                   if a.command and a.command.command == "cudalens.optimize"]
        assert actions == ["Optimize kernel saxpy (built-in passes)"], actions


@pytest.mark.skipif(__import__("gpu_probe").gpu_present(),
                    reason="this machine has a GPU: the default runner would start")
async def test_a_run_without_a_gpu_leaves_its_failure_on_the_hover(tmp_path):
    from harness import RUNNER_FACTORY, SERVER_COMMAND

    live = [c for c in SERVER_COMMAND if c not in ("--runner-factory", RUNNER_FACTORY)]
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path, command=live, env={"CUDALENS_RUNNER_URL": ""}) as client:
        uri = client.open(path)
        position = types.Position(SIGNATURE_LINE, 18)
        params = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri),
                                   position=position)
        before = hover_text(await client.text_document_hover_async(params))
        assert "failed" not in before
        started = await client.run(types.Command(
            title="Optimize", command="cudalens.optimize",
            arguments=[{"uri": uri, "kernel": "saxpy"}]))
        assert started["ok"], started
        await client.wait_for(lambda: errors(client), what="the failure", timeout=60)
        (message,) = errors(client)
        prefix = "cudalens: optimizing saxpy failed: "
        assert message.startswith(prefix + "no GPU runner can be used: ")
        text = hover_text(await client.text_document_hover_async(params))
        sections = text.split("\n\n")
        assert sections[0] == "**saxpy**: not measured yet"
        found = re.fullmatch(r"Last \*\*Optimize\*\* failed \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d "
                             r"UTC\): (.*)", sections[1], re.S)
        assert found is not None, text
        assert found.group(1) == message[len(prefix):]
