"""The language server latency benchmark, small: it runs end to end against ``cudalens lsp``
and its answers are the right ones (a lens on each kernel's first line, hovers on names,
nvcc's error on the edited line). No time limits: CI machines are not benchmark machines."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from lsprotocol import types

ROOT = Path(__file__).absolute().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_lsp_latency as bench  # noqa: E402
from lsp_source_gen import SHAPES, generate  # noqa: E402
from nvcc_util import nvcc_path  # noqa: E402

from cudalens.source.parser import parse_source  # noqa: E402

REQUESTS = ("codeLens", "inlayHint (60 lines)", "inlayHint (whole file)", "hover", "codeAction")


def test_generated_source_records_where_each_kernel_is():
    gen = generate(600, seed=1)
    assert gen.line_count >= 600
    parsed = parse_source(gen.text)
    assert parsed.error_ranges == ()
    assert [(k.qualified_name, k.range.start.line, k.name_range.start.line,
             k.name_range.start.column) for k in parsed.kernels] == \
        [(k.qualified_name, k.start_line, k.name_line, k.name_column) for k in gen.kernels]
    for k, model in zip(gen.kernels, parsed.kernels):
        assert model.body_range.start.line < k.body_line < model.body_range.end.line
    # every shape is there, in namespaces and extern "C" too
    assert len({k.name.rsplit("_", 1)[0] for k in gen.kernels}) == len(SHAPES)
    assert any("::" in k.qualified_name for k in gen.kernels)
    assert any(k.extern_c for k in parsed.kernels)
    assert generate(600, seed=1).text == gen.text


def test_percentile_and_summary():
    assert bench.percentile([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], 90) == \
        pytest.approx(9.1)
    assert bench.percentile([4.0], 90) == 4.0
    s = bench.Samples("x", [3.0, 1.0, 2.0]).summary()
    assert (s["n"], s["median_ms"], s["min_ms"], s["max_ms"]) == (3, 2.0, 1.0, 3.0)
    assert s["samples_ms"] == [3.0, 1.0, 2.0]


def test_lens_check_fails_on_a_misplaced_lens():
    at = types.Range(types.Position(4, 0), types.Position(4, 0))
    lens = types.CodeLens(range=at, command=types.Command(title="Optimize", command=""))
    bench.check_lenses([lens], [4])
    with pytest.raises(bench.BenchmarkError, match=r"missing \[5\], unexpected \[4\]"):
        bench.check_lenses([lens], [5])


def test_kernel_lines_follow_inserted_lines():
    gen = generate(200)
    lines = bench.kernel_lines(gen, [0, gen.kernels[1].start_line + 1])
    assert lines[0] == gen.kernels[0].start_line + 1
    assert lines[1] == gen.kernels[1].start_line + 2


def test_small_benchmark_runs_against_the_server_and_checks_its_answers(tmp_path):
    nvcc = nvcc_path() is not None
    run = bench.Run(lines=1000, requests=3, warmup=1, nvcc_edits=1 if nvcc else 0,
                    debounce_ms=0, timeout_s=240)
    result = asyncio.run(bench.measure(run, tmp_path))
    gen = generate(1000)
    assert result["kernels"] == len(gen.kernels) == 35
    # every kernel has its lens (Optimize, or why not) on the line its definition starts;
    # after the edits (one line inserted every other edit) the lenses followed the kernels
    assert result["lens_count_on_open"] >= len(gen.kernels)
    final = parse_source((tmp_path / "bench.final.cu").read_text(encoding="utf-8"))
    assert result["lens_lines"] == [k.range.start.line for k in final.kernels]
    assert result["lens_lines"] != [k.start_line for k in gen.kernels]
    assert len(final.kernels) == len(gen.kernels)
    for name in REQUESTS:
        assert result["steady"][name]["n"] == 3
        assert result["after_edit"][name]["n"] == 3
        assert result["steady"][name]["median_ms"] > 0
    assert result["diagnostics_parse"]["n"] == 3 * len(REQUESTS)
    if nvcc:  # each sample waited for nvcc's message at the edited place (or timed out)
        nv = result["diagnostics_nvcc"]
        assert (nv["error_edit"]["n"], nv["valid_edit"]["n"], nv["debounce_ms"]) == (1, 1, 0)
    else:
        assert result["diagnostics_nvcc"] is None
