"""End to end (pytest-lsp, real nvcc, no GPU): compile diagnostics at their positions,
ptxas notes on kernel names, refresh after edits, and a header changed on disk."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from lsprotocol import types

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from harness import HERE, editor  # noqa: E402

pytestmark = [pytest.mark.asyncio,
              pytest.mark.skipif(shutil.which("nvcc") is None,
                                 reason="needs nvcc (the CUDA toolkit) for compile diagnostics")]

CHECK = {"check": {"enabled": True, "debounceMs": 50}}
ERROR = types.DiagnosticSeverity.Error
WARNING = types.DiagnosticSeverity.Warning
HINT = types.DiagnosticSeverity.Hint


def _rng(l1, c1, l2, c2) -> types.Range:
    return types.Range(types.Position(l1, c1), types.Position(l2, c2))


def _compiled(client, uri):
    return [d for d in client.diagnostics_for(uri) if d.source in ("nvcc", "ptxas")]


async def test_compile_error_and_warning_at_their_utf16_positions_then_fixed(tmp_path):
    shutil.copy(HERE / "broken.cu", tmp_path / "broken.cu")
    async with editor(tmp_path, settings=CHECK) as client:
        uri = client.open(tmp_path / "broken.cu")
        diags = await client.wait_for(lambda: _compiled(client, uri), what="nvcc diagnostics")
        got = sorted(((d.severity, d.range, d.message, d.code) for d in diags),
                     key=lambda t: t[0])
        # line 6 (zero-based 5): "missing_factor" starts at character 48; the emoji before it
        # is two UTF-16 code units, so the client's column is 49.
        assert got == [
            (ERROR, _rng(5, 49, 5, 63), 'identifier "missing_factor" is undefined', None),
            (WARNING, _rng(3, 8, 3, 14), 'variable "unused" was declared but never referenced',
             "177-D"),
        ]
        # edits arrive in a burst: the diagnostics that stay are those of the last version
        text = client.text(uri)
        client.change(uri, text.replace("missing_factor", "missing_facto"))
        client.change(uri, text.replace("missing_factor", "2.0f /* fixed */"))
        last = client.change(uri, text.replace("missing_factor", "2.0f"))
        fixed = await client.wait_for(
            lambda: [d for d in _compiled(client, uri) if d.source == "ptxas"],
            what="ptxas notes after the fix")
        assert last == 4
        assert [(d.severity, d.range, d.message) for d in fixed] == [
            (HINT, _rng(1, 16, 1, 21), "scale: 8 registers, 0 B shared, 0 B stack, no spills "
                                       "(sm_90)")]
        assert [d.severity for d in _compiled(client, uri)].count(ERROR) == 0
        assert [(d.range, d.code) for d in _compiled(client, uri) if d.severity == WARNING] == \
            [(_rng(3, 8, 3, 14), "177-D")]


async def test_header_broken_on_disk_shows_on_the_include_line(tmp_path):
    for name in ("uses_header.cu", "header.cuh"):
        shutil.copy(HERE / name, tmp_path / name)
    async with editor(tmp_path, settings=CHECK) as client:
        uri = client.open(tmp_path / "uses_header.cu")
        await client.wait_for(lambda: [d for d in _compiled(client, uri) if d.source == "ptxas"],
                              what="the first check")
        assert [d for d in _compiled(client, uri) if d.severity == ERROR] == []
        # another tool rewrites the header: the watcher notices and the file is checked again
        header = tmp_path / "header.cuh"
        header.write_text(header.read_text().replace("2.0f * x;", "2.0f * x"))
        errors = await client.wait_for(
            lambda: [d for d in _compiled(client, uri) if d.severity == ERROR],
            what="the header's error")
        assert [(d.range, d.message) for d in errors] == [
            (_rng(0, 0, 0, 21), f'{header}:2: expected a ";"')]


async def test_nvcc_missing_is_said_once_and_results_still_work(tmp_path):
    shutil.copy(HERE / "broken.cu", tmp_path / "broken.cu")
    settings = {"check": {"enabled": True, "debounceMs": 0, "nvcc": "/nonexistent/nvcc"}}
    async with editor(tmp_path, settings=settings) as client:
        uri = client.open(tmp_path / "broken.cu")
        msg = await client.wait_for(lambda: [m for m in client.messages
                                             if "compile diagnostics are off" in m.message],
                                    what="the nvcc message")
        assert msg[0].type == types.MessageType.Warning
        assert "nvcc not found (looked for /nonexistent/nvcc)" in msg[0].message
        assert _compiled(client, uri) == []


async def test_spills_warn_and_a_stack_frame_informs_on_the_kernel_name(tmp_path):
    shutil.copy(HERE / "resources.cu", tmp_path / "resources.cu")
    async with editor(tmp_path, settings=CHECK) as client:
        uri = client.open(tmp_path / "resources.cu")
        notes = await client.wait_for(
            lambda: [d for d in _compiled(client, uri) if d.source == "ptxas"],
            what="ptxas notes")
        by_line = {d.range.start.line: d for d in notes}
        assert sorted(by_line) == [3, 16], notes
        # __launch_bounds__(1024, 2) leaves 65536 / 2048 = 32 registers for 64 live values
        spills = by_line[3]
        assert (spills.severity, spills.range) == (WARNING, _rng(3, 43, 3, 49))
        assert re.fullmatch(r"spills: 32 registers, 0 B shared, \d+ B stack, spills \d+ B "
                            r"stores / \d+ B loads \(sm_90\)", spills.message), spills.message
        # float buf[256] indexed at run time: a 1 KiB stack frame, no spills
        stack = by_line[16]
        assert (stack.severity, stack.range) == (types.DiagnosticSeverity.Information,
                                                 _rng(16, 16, 16, 27))
        assert re.fullmatch(r"stack_frame: \d+ registers, 0 B shared, 1024 B stack, no spills "
                            r"\(sm_90\)", stack.message), stack.message
