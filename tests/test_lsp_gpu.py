"""End to end on a real GPU (marker gpu): pytest-lsp drives ``cudalens lsp`` with the
default runner factory, which starts a local runner on this machine's GPU (no replay), to
optimize ``examples/transpose.cu`` and apply the best verified candidate.

The same steps as ``test_lsp_optimize.test_apply_sends_a_versioned_edit_and_the_spec_follows``
with only the runner swapped: the server command is ``SERVER_COMMAND`` without
``--runner-factory``, so ``cudalens.lsp.server.default_runner_factory`` is used; with no
``runner.url`` set that is ``RunnerClient()``, a runner child process on 127.0.0.1. Numbers
are not known in advance, so the test reads them from what the server says and checks that
every place says the same (lens, action, progress, diagnostic, message) and that the speedup
is above 1 with its 95% interval above 1 (what "verified and faster beyond noise" means).

Skipped, with the reason, where pycuda or a GPU is missing (``gpu_runner.session.import_driver``).
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from pathlib import Path

import pytest
from lsprotocol import types

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))
sys.path.insert(0, str(Path(__file__).absolute().parent))

from harness import RUNNER_FACTORY, SERVER_COMMAND, TEST_SETTINGS, copy_example, editor  # noqa: E402
from test_lsp_optimize import action, ended, titles  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.asyncio]

# The live run: compiling the candidates, verifying and timing them on the GPU.
LIVE_TIMEOUT_S = 900.0
KERNEL = "transpose_naive"
KERNEL_LINE = 3  # zero-based line of "__global__ void transpose_naive(...)"
INSIDE = 5  # a line inside the kernel, where the code actions are asked for
LIVE_COMMAND = [c for c in SERVER_COMMAND
                if c not in ("--runner-factory", RUNNER_FACTORY)]
SETTINGS = {**TEST_SETTINGS, "proposer": "builtin"}
SPEEDUP = r"(\d+\.\d\d)x"
SPEEDUP_CI = r"(\d+\.\d\d)x \[(\d+\.\d\d), (\d+\.\d\d)\]"


def _need_gpu() -> None:
    from gpu_runner.session import NoGpuError, import_driver

    try:
        import_driver()
    except NoGpuError as exc:
        pytest.skip(str(exc))


def _ncu_found() -> bool:
    """Whether Nsight Compute is where the runner looks for it (``gpu_runner.profile``)."""
    from gpu_runner.profile import find_ncu

    return find_ncu() is not None


def _log_hover(text: str) -> None:
    """Keeps the hover's text in ``$CUDALENS_GPU_LOG_DIR/lsp-hover.md`` (for the log)."""
    log_dir = os.environ.get("CUDALENS_GPU_LOG_DIR")
    if log_dir:
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        (Path(log_dir) / "lsp-hover.md").write_text(text + "\n", encoding="utf-8")


async def optimize_live(client, uri: str) -> dict:
    """``test_lsp_optimize.optimize`` with a live run's time limit."""
    found = action(await client.code_actions(uri, INSIDE), "cudalens.optimize")
    started = await client.run(found.command)
    assert started["ok"], started
    await client.wait_for(lambda: ended(client, started["token"]), timeout=LIVE_TIMEOUT_S,
                          what="the optimization on the GPU")
    return started


async def test_live_optimize_and_apply_on_the_gpu(tmp_path):
    _need_gpu()
    path = copy_example(tmp_path, "transpose.cu")
    original = path.read_text()
    assert original.splitlines()[KERNEL_LINE].startswith(f"__global__ void {KERNEL}(")
    async with editor(tmp_path, settings=SETTINGS, command=LIVE_COMMAND) as client:
        uri = client.open(path)
        assert titles(await client.code_lenses(uri)) == [
            ("Optimize", "cudalens.optimize"),
            ("Capture a real launch", "cudalens.captureLaunch")]

        started = await optimize_live(client, uri)
        reports = client.progress_reports[started["token"]]
        assert (reports[0].kind, reports[0].title) == \
            ("begin", f"Optimize {KERNEL} (built-in passes)")
        errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
        assert errors == [], errors
        assert any(re.fullmatch(r"\d+ candidates proposed; running on .+", p.message or "")
                   for p in reports), [p.message for p in reports]
        final = re.fullmatch(rf"{KERNEL}: best {SPEEDUP} \(verified\), (\d+)/(\d+) candidates "
                             r"verified \(built-in passes\)", reports[-1].message or "")
        assert final is not None, reports[-1].message
        best = float(final.group(1))
        assert best > 1.0

        # the lens offers the same candidate the progress announced
        lenses = titles(await client.code_lenses(uri))
        assert [name for _, name in lenses] == ["", "cudalens.optimize", "cudalens.showDiff",
                                                "cudalens.apply", "cudalens.reject",
                                                "cudalens.captureLaunch"], lenses
        assert re.fullmatch(r"[\d,.]+ us, \d+% of copy bandwidth, .+", lenses[0][0]), lenses
        # (a candidate timed with another launch says how it runs under the spec's launch)
        assert re.fullmatch(rf"{best:.2f}x faster candidate: show diff( \((\d+\.\d\dx as a "
                            rf"drop-in; |needs a new launch: ).+ with block = .+\))?",
                            lenses[2][0]), lenses[2][0]
        info = await client.wait_for(lambda: [d for d in client.diagnostics_for(uri)
                                              if d.source == "cudalens"], what="results")
        assert len(info) == 1 and info[0].severity == types.DiagnosticSeverity.Information
        assert info[0].range == types.Range(types.Position(KERNEL_LINE, 16),
                                            types.Position(KERNEL_LINE, 16 + len(KERNEL)))
        verified = re.fullmatch(rf"{KERNEL}: verified candidate {SPEEDUP_CI} faster on (.+): (.+)",
                                info[0].message)
        assert verified is not None, info[0].message
        value, low, high = (float(verified.group(i)) for i in (1, 2, 3))
        assert value == best and 1.0 < low <= value <= high
        label = verified.group(5)

        # the hover says where the winner's time goes: the runner profiled it with Nsight
        # Compute (POST /v1/profile) unless it said why it could not
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri),
            position=types.Position(KERNEL_LINE, 18)))
        text = hover.contents.value
        _log_hover(text)
        if _ncu_found():
            profiled = re.search(rf"profile \(Nsight Compute, one launch of candidate "
                                 rf"{re.escape(label)}\): achieved occupancy (\d+)%, DRAM "
                                 r"throughput (\d+)% of peak, main stalls: (.+)", text)
            assert profiled is not None, text
            occupancy, dram = int(profiled.group(1)), int(profiled.group(2))
            assert 0 < occupancy <= 100 and 0 < dram <= 100, profiled.group(0)
            assert profiled.group(3) != "none reported", profiled.group(0)
        else:
            assert "stall reasons: not profiled (" in text, text

        actions = await client.code_actions(uri, INSIDE)
        assert [a.title for a in actions][:2] == [
            f"Optimize kernel {KERNEL} again (built-in passes)",
            f"Apply candidate ({best:.2f}x, verified)"]
        shown = await client.run(action(actions, "cudalens.showDiff").command)
        assert shown["ok"] and shown["diff"].splitlines()[:2] == ["--- a/transpose.cu",
                                                                  "+++ b/transpose.cu"]

        # apply: a versioned workspace edit, which the editor takes since the version matches;
        # a winner that needs its launch, which no launch site here can be given, is asked
        # about first (this workspace has no host code): the test answers "Apply anyway"
        asked = []

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def _ask(ls, params):
            asked.append(params.message)
            return types.MessageActionItem(title="Apply anyway")

        answer = await client.run(action(actions, "cudalens.apply").command)
        needs_launch = "needs a new launch" in lenses[2][0]
        assert len(asked) == (1 if needs_launch else 0), asked
        if needs_launch:
            assert asked[0].startswith(f"cudalens: {label} must be launched with block = "), asked
            assert "no launch of transpose_naive was found in the workspace" in asked[0], asked
        assert answer["ok"] and answer["applied"] and answer["version"] == 1, answer
        edit = client.applied_edits[0]
        source_edit = edit.edit.document_changes[0]
        assert (source_edit.text_document.uri, source_edit.text_document.version) == (uri, 1)
        assert client.doc_version(uri) == 2
        # the editor's text is now the candidate: it differs from the original by its diff
        applied = client.text(uri)
        assert applied != original
        diff = difflib.unified_diff(original.splitlines(True), applied.splitlines(True), "a", "b")
        assert list(diff)[2:] == shown["diff"].splitlines(True)[2:]
        assert client.messages[-1].message.startswith(
            f"Applied {label} to {KERNEL}: {value:.2f}x [{low:.2f}, {high:.2f}] faster, verified "
            f"against the original on ")

        # what an editor does next: save; the file on disk is the candidate
        path.write_text(applied)
        assert path.read_text() == applied and path.read_text() != original
