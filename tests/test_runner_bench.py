"""benchmarks/bench_runner.py without a GPU: arguments, the arithmetic of its ratios, Kernel
Tuner's result records, the report's header and writing, and the no-GPU exit."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_runner", ROOT / "benchmarks" / "bench_runner.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_parse_blocks_lists_and_ranges():
    assert bench.parse_blocks("128, 32,64,64") == (32, 64, 128)
    assert bench.parse_blocks("32:128:32") == (32, 64, 96, 128)
    assert bench.DEFAULT_BLOCKS[0] == 32 and bench.DEFAULT_BLOCKS[-1] == 1024
    assert len(bench.DEFAULT_BLOCKS) == 32


@pytest.mark.parametrize("text, message", [
    ("32,abc", "--blocks: 'abc' is not a number of threads"),
    ("32:64", "--blocks: expected start:stop:step, found '32:64'"),
    ("32:64:0", "--blocks: step must be positive, found 0"),
    ("a:64:1", "--blocks: expected integers in start:stop:step, found 'a:64:1'"),
    ("0,2048", "--blocks: block sizes must lie in 1..1024 threads, found [0, 2048]"),
])
def test_parse_blocks_errors(text, message):
    with pytest.raises(ValueError) as e:
        bench.parse_blocks(text)
    assert str(e.value) == message


def test_parse_args_defaults_and_refusals(tmp_path, capsys):
    a = bench.parse_args(["--out", str(tmp_path / "r.json")])
    assert (a.n, a.blocks, a.repetitions, a.skip_kernel_tuner) == \
        (1 << 22, bench.DEFAULT_BLOCKS, 50, False)
    a = bench.parse_args(["--out", "x.json", "--blocks", "64,256", "--repetitions", "9"])
    assert (a.blocks, a.repetitions) == ((64, 256), 9)
    for argv, msg in ((["--out", "x.json", "--n", "0"], "--n must be at least 1, found 0"),
                      (["--out", "x.json", "--repetitions", "2"],
                       "--repetitions must be at least 5, found 2"),
                      (["--out", str(tmp_path)], "--out must be a file, found the directory"),
                      (["--out", "x.json", "--blocks", "32,x"], "'x' is not a number")):
        with pytest.raises(SystemExit) as e:
            bench.parse_args(argv)
        assert e.value.code == 2
        assert msg in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.parse_args([])
    assert "--out" in capsys.readouterr().err


def test_per_minute_and_ratios():
    assert bench.per_minute(32, 16.0) == 120.0
    with pytest.raises(ValueError, match="expected a positive duration, found 0 s"):
        bench.per_minute(3, 0)
    r = bench.ratios({32: 10.0, 64: 12.0, 128: 9.0, 256: 0.0}, {32: 10.0, 64: 10.0, 128: 10.0,
                                                                  512: 5.0})
    assert r["per_key"] == {"32": 1.0, "64": 1.2, "128": 0.9}
    assert (r["count"], r["median"], r["min"], r["max"]) == (3, 1.0, 0.9, 1.2)
    assert r["median_abs_deviation_from_1"] == pytest.approx(0.1)
    assert bench.ratios({1: 1.0}, {2: 1.0}) == {"per_key": {}, "count": 0}


def test_kernel_tuner_times_are_medians_of_its_iterations_in_microseconds():
    assert bench.kernel_tuner_time_us({"time": 0.02, "times": [0.01, 0.05, 0.012]}) == \
        pytest.approx(12.0)
    assert bench.kernel_tuner_time_us({"time": 0.02}) == pytest.approx(20.0)
    # Kernel Tuner marks failed configurations with an error object instead of a time.
    assert bench.kernel_tuner_time_us({"time": "InvalidConfig"}) is None
    assert bench.kernel_tuner_time_us({"times": ["x"], "time": 0.5}) == pytest.approx(500.0)


def test_header_and_report_writing(tmp_path):
    args = Namespace(n=1024, blocks=(32, 64), repetitions=7, skip_kernel_tuner=True,
                     commit="abc123")
    h = bench.header(args, {"name": "NVIDIA H200", "driver_version": "580.159.04"})
    assert (h["commit"], h["driver"], h["device"]["name"]) == \
        ("abc123", "580.159.04", "NVIDIA H200")
    assert h["args"] == {"n": 1024, "blocks": [32, 64], "repetitions": 7, "kernel_tuner": False}
    assert h["date"].endswith("+00:00") and h["date"][:2] == "20"
    out = tmp_path / "deep" / "r.json"
    bench.write_report(out, h)
    assert json.loads(out.read_text()) == h
    assert [p.name for p in out.parent.iterdir()] == ["r.json"]


def test_git_commit_of_this_checkout_and_of_no_repository(tmp_path):
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=False).stdout.strip()
    assert bench.git_commit() == (head or "unknown")
    assert bench.git_commit(tmp_path) == "unknown"


def test_problem_has_a_ragged_size_and_launches_cover_it():
    pytest.importorskip("numpy")
    problem = bench._problem(1 << 22)
    nominal, ragged = (c.args[0].value for c in problem.cases)
    assert nominal == 1 << 22 and ragged % 2 == 1 and ragged < nominal
    v = bench._variant("b96", 96, problem)
    assert [x.grid[0] * 96 >= n > (x.grid[0] - 1) * 96
            for x, n in zip(v.launches, (nominal, ragged))] == [True, True]


def test_without_a_gpu_it_exits_3_and_writes_nothing(tmp_path):
    try:
        import pycuda.driver  # noqa: F401
        pytest.skip("pycuda is installed here; the no-GPU exit is not reachable")
    except ImportError:
        pass
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_runner.py"),
                           "--out", str(out), "--skip-kernel-tuner"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 3, proc.stderr
    assert "bench_runner: no GPU: " in proc.stderr and "pycuda" in proc.stderr
    assert not out.exists()
