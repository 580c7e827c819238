"""The GPU-free parts of ``benchmarks/bench_optimizer.py``: the block space Kernel Tuner
searches, the spec grid expressed as Kernel Tuner's problem size (or why it cannot be), the
PyTorch operator table covering every example, and the clear failure when a package is
missing. The benchmark itself needs a GPU, kernel_tuner and torch."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Optional

import pytest

from cudalens.spec.resolve import sizes_for
from cudalens.target import load_target

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_optimizer as bench  # noqa: E402


def test_block_spaces():
    one = bench.block_space(1)
    assert one[0] == (32,) and one[-1] == (1024,) and len(one) == 32
    two = bench.block_space(2)
    assert (32, 8) in two and (16, 16) in two and (1024, 1) in two and (8, 4) in two
    assert all(32 <= x * y <= 1024 and x >= 8 for x, y in two)
    assert (4, 16) not in two


@pytest.mark.parametrize("example,size", [
    ("saxpy", (1 << 25,)), ("transpose", (8192, 8192)), ("matmul", (2048, 2048)),
    ("gemv", (16384,)), ("histogram", (1 << 26,)), ("conv2d", (8192, 8192)),
    ("relu_bias", (4096, 8192)),
])
def test_kernel_tuner_problem_size_from_the_spec_grid(example, size):
    target = load_target(ROOT / "examples" / f"{example}.cu")
    assert bench.kt_problem(target.spec, sizes_for(target.spec, "nominal"), 132) == (size, "")


@pytest.mark.parametrize("example", ["reduce_sum", "reduce_max"])
def test_fixed_blocks_are_not_tuned(example):
    target = load_target(ROOT / "examples" / f"{example}.cu")
    size, why = bench.kt_problem(target.spec, sizes_for(target.spec, "nominal"), 132)
    assert size is None
    assert why.endswith("does not follow the block: the block size is fixed by what the kernel "
                        "computes")


def test_capped_grid_cannot_be_expressed():
    import dataclasses
    target = load_target(ROOT / "examples" / "saxpy.cu")
    spec = dataclasses.replace(target.spec, launch=dataclasses.replace(
        target.spec.launch, grid=("min(ceil_div(n, block.x), sm_count * 8)",)))
    size, why = bench.kt_problem(spec, sizes_for(spec, "nominal"), 132)
    assert size is None
    assert why == ("grid.x = min(ceil_div(n, block.x), sm_count * 8) is not ceil_div(E, "
                   "block.x) for block (32,): Kernel Tuner cannot express it")


def test_every_example_has_a_pytorch_operator():
    ops = bench.torch_ops()
    kernels = {load_target(p).kernel.name for p in (ROOT / "examples").glob("*.cu")}
    assert kernels <= set(ops), sorted(kernels - set(ops))


def test_missing_package_is_named_with_its_install_command():
    with pytest.raises(bench.MissingDependency, match=r"bench_optimizer needs no_such_pkg for "
                       r"testing, but importing no_such_mod failed .*; install it with 'pip "
                       r"install no_such_pkg'"):
        bench.need("no_such_mod", "no_such_pkg", "testing")


@pytest.mark.skipif(all(importlib.util.find_spec(m) for m in ("kernel_tuner", "torch", "pycuda")),
                    reason="kernel_tuner, torch and pycuda are all installed: main would run")
def test_main_exits_2_saying_what_is_missing(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(sys, "argv", ["bench_optimizer.py", "--commit", "x", "--out",
                                      str(tmp_path / "r.json")])
    assert bench.main() == 2
    err = capsys.readouterr().err
    assert err.startswith("error: bench_optimizer needs ") and "pip install" in err
    assert not (tmp_path / "r.json").exists()


def test_goals_for_one_record():
    rec = {"kernel": "transpose_naive", "ours": {"speedup": {"value": 3.1}, "verdict": "passed",
                                                 "timing": {"percent_of_copy": 70.0}},
           "kernel_tuner": {"speedup": {"value": 2.0}}}
    assert bench.goals(rec) == {"verified": True, "at_least_kernel_tuner": True,
                                "elementwise_85_percent_of_copy": None, "at_least_2x": True,
                                "elementwise_90_percent_of_copy": None,
                                "sgemm_50_percent_of_cublas": None}
    rec = {"kernel": "saxpy", "ours": {"speedup": {"value": 1.2}, "verdict": "passed",
                                       "timing": {"percent_of_copy": 84.0}},
           "kernel_tuner": {"speedup": {"value": 1.3}}}
    got = bench.goals(rec)
    assert got["elementwise_85_percent_of_copy"] is False and got["at_least_2x"] is None
    assert got["at_least_kernel_tuner"] is False
    assert got["elementwise_90_percent_of_copy"] is False
    rec = {"kernel": "matmul_naive", "ours": {"speedup": {"value": 9.0}, "verdict": "passed",
                                              "timing": {"median_us": 500.0}},
           "kernel_tuner": {"speedup": {"value": 1.2}}, "pytorch": {"median_us": 260.0}}
    assert bench.goals(rec)["sgemm_50_percent_of_cublas"] is True
    rec["pytorch"]["median_us"] = 240.0  # cuBLAS more than twice as fast
    assert bench.goals(rec)["sgemm_50_percent_of_cublas"] is False


# -- the row of a kernel the search could not speed up (stencil_1d, 2026-12-02: its best
# candidate measured 0.95x and was shown as ours) --------------------------------------------

def _row(label: str, speedup: tuple[float, float, float]):
    from cudalens.optimize import Row
    from cudalens.optimizer.candidate import Candidate
    from cudalens.spec.model import LaunchDecl
    from gpu_runner.report import CandidateResult, CompileReport, Speedup, Timing, Verdict

    cand = Candidate(label=label, explanation=f"{label}: why",
                     source="__global__ void k() {}\n", kernel="k", launch=LaunchDecl(("512",), ("ceil_div(n, block.x)",)),
                     passes=("launch_config",))
    median = 111.0 / speedup[0]
    result = CandidateResult(compile=CompileReport(variant=label, ok=True),
                             verdict=Verdict(variant=label, status="passed", reason="ok"),
                             timing=Timing(variant=label, median_us=median, q1_us=median,
                                           q3_us=median, min_us=median, samples=7,
                                           achieved_gbps=2400.0, percent_of_copy=55.0),
                             speedup=Speedup(*speedup))
    return Row(candidate=cand, result=result)


def _search(rows, winner=None):
    """The parts of an ``OptimizeResult`` ``pick_ours`` reads, ``best_verified`` its own."""
    import types

    from cudalens.optimize import OptimizeResult

    result = types.SimpleNamespace(rows=tuple(rows), winner=winner)
    result.best_verified = OptimizeResult.best_verified.fget(result)
    return result


def _record(fields: dict, ours_measured: Optional[dict] = None) -> dict:
    """A kernel's record as ``bench_one`` makes it from ``fields`` and the side-by-side run."""
    base = {"median_us": 111.0, "percent_of_copy": 61.0, "gflops": 3940.0}
    rec = {"kernel": "stencil_1d", "baseline": base, **fields,
           "kernel_tuner": {"block": [192], "timing": {"median_us": 114.4},
                            "speedup": {"value": 0.97, "ci_low": 0.97, "ci_high": 0.98}},
           "pytorch": {"median_us": 328.1, "speedup": 0.34}}
    if ours_measured is None:
        rec["ours"].update(bench.original_kept(base))
    else:
        rec["ours"].update(ours_measured)
    return rec


def test_a_slower_best_candidate_is_recorded_apart_and_the_original_is_ours():
    slower = _row("restrict block=512", (0.95, 0.94, 0.96))
    ours, best, fields = bench.pick_ours(_search([_row("block=128", (0.90, 0.89, 0.91)),
                                                   slower]))
    assert ours is None and best is slower.candidate
    assert fields["ours"] == {"label": "original kept (no candidate significantly faster)",
                              "explanation": "", "significant": False, "candidates": 2}
    assert fields["best_candidate"] == {
        "label": "restrict block=512", "explanation": "restrict block=512: why",
        "search_speedup": {"value": 0.95, "ci_low": 0.94, "ci_high": 0.96}}
    rec = _record(fields)
    rec["best_candidate"].update({"timing": {"median_us": 116.8},
                                  "speedup": {"value": 0.95, "ci_low": 0.94, "ci_high": 0.96}})
    row = bench.table({"runs": [rec]}).splitlines()[2]
    assert row == ("| stencil_1d | 111.0 us | 111.0 us, 1.00x (original kept) | "
                   "114.4 us (0.97x) [192] | 328.1 us (0.34x) | 61% / 3,940 |")
    assert bench.goals(rec)["at_least_kernel_tuner"] is True  # 1.00 against 0.97
    # A record holding the slower candidate as ours (files before 2026-12-03) prints the same.
    old = _record({"ours": {"label": "restrict block=512", "significant": False}},
                  {"timing": {"median_us": 116.8, "percent_of_copy": 58.0, "gflops": 3744.0},
                   "speedup": {"value": 0.95, "ci_low": 0.94, "ci_high": 0.96}})
    assert bench.table({"runs": [old]}).splitlines()[2] == row


def test_a_significant_winner_is_ours_with_its_measured_speedup():
    win = _row("restrict vec4 block=512", (1.30, 1.28, 1.32))
    ours, best, fields = bench.pick_ours(_search([win], winner=win))
    assert ours is win.candidate and best is None and "best_candidate" not in fields
    assert fields["ours"]["significant"] is True
    rec = _record(fields, {"timing": {"median_us": 85.4, "percent_of_copy": 79.3},
                           "speedup": {"value": 1.30, "ci_low": 1.28, "ci_high": 1.32}})
    assert bench.table({"runs": [rec]}).splitlines()[2] == (
        "| stencil_1d | 111.0 us | 85.4 us (1.30x) | 114.4 us (0.97x) [192] | "
        "328.1 us (0.34x) | 79% |")


def test_the_readme_table_keeps_the_original_of_an_older_file_too(tmp_path):
    # Files before 2026-12-03 hold the slower best candidate as ours, not significant.
    import json

    import readme_table

    rec = _record({"ours": {"label": "restrict block=512", "significant": False}},
                  {"timing": {"median_us": 116.8, "percent_of_copy": 58.0},
                   "speedup": {"value": 0.95, "ci_low": 0.94, "ci_high": 0.96}})
    path = tmp_path / "h200-optimizer-x.json"
    path.write_text(json.dumps({
        "device": {"name": "NVIDIA H200", "driver_version": "580", "copy_bandwidth_gbps": 4378},
        "commit": "b2167f7aaaa", "date": "2026-12-02T00:00:00", "runs": [rec],
        "settings": {"budget": 16, "repetitions": 50}}))
    assert readme_table.side_by_side(path).splitlines()[2] == (
        "| `stencil_1d` | 111.0 us | 1.00x (original kept) | none significant | "
        "0.97x [0.97, 0.98] (192) | ahead | 328.1 us (0.34x) | 61% / 3,940 |")


def test_the_readme_table_of_several_files_keeps_each_kernels_last_run(tmp_path):
    # A later file's run of a kernel replaces an earlier one's; the footer names each file
    # with its commit and the kernels taken from it.
    import json

    import readme_table

    def write(name, commit, runs):
        path = tmp_path / name
        path.write_text(json.dumps({
            "device": {"name": "NVIDIA H200", "driver_version": "580",
                       "copy_bandwidth_gbps": 4378},
            "commit": commit, "date": "2026-12-03T00:00:00", "runs": runs,
            "settings": {"budget": 24, "repetitions": 50}}))
        return path

    old = _record({"ours": {"label": "restrict block=512", "significant": False}},
                  {"timing": {"median_us": 116.8, "percent_of_copy": 58.0},
                   "speedup": {"value": 0.95, "ci_low": 0.94, "ci_high": 0.96}})
    other = dict(old, kernel="gather_scale")
    new = _record({"ours": {"label": "stencil-regs vec4", "significant": True}},
                  {"timing": {"median_us": 65.6, "percent_of_copy": 93.0},
                   "speedup": {"value": 1.69, "ci_low": 1.68, "ci_high": 1.70}})
    a = write("h200-optimizer-a.json", "aaaaaaa111", [old, other])
    b = write("h200-optimizer-b.json", "bbbbbbb222", [new])
    lines = readme_table.side_by_side([a, b]).splitlines()
    assert lines[2] == ("| `stencil_1d` | 111.0 us | 1.69x [1.68, 1.70] | stencil-regs vec4 | "
                        "0.97x [0.97, 0.98] (192) | ahead | 328.1 us (0.34x) | 93% |")
    assert lines[3].startswith("| `gather_scale` | 111.0 us | 1.00x (original kept) |")
    assert lines[5].endswith("commit aaaaaaa, 2026-12-03; 24 candidates at most, 50 timed "
                             "rounds at most. From h200-optimizer-a.json (`gather_scale`).")
    assert lines[6].endswith("From h200-optimizer-b.json (`stencil_1d`).")
