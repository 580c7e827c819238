"""benchmarks/bench_multi_gpu.py end to end on two fake GPUs (tests/service_fakes.py
``TwoFakeGpus``: speedup 2.0 on GPU 0, 1.5 on GPU 1), so its bookkeeping is checked without a
GPU: both columns, the split's candidates per GPU, and a speedup disagreement it must show."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_multi_gpu  # noqa: E402


def test_two_columns_and_per_gpu_speedups(tmp_path, capsys):
    out = tmp_path / "multi.json"
    rc = bench_multi_gpu.main(["--out", str(out), "--n", "4096", "--blocks", "64,128,256,512",
                               "--repetitions", "5", "--rounds", "1", "--commit", "abc",
                               "--backend", "service_fakes:TwoFakeGpus"])
    assert rc == 0
    report = json.loads(out.read_text())
    assert sorted(report["devices"]) == ["0", "1"] and report["commit"] == "abc"
    t = report["throughput"]
    assert t["candidates"] == 4 and t["gpus"] == [0, 1]
    assert t["one_gpu"]["runs"][0]["verified"] == 4
    assert t["one_gpu"]["runs"][0]["candidates_per_gpu"] == {"0": 4}
    assert t["all_gpus"]["runs"][0]["candidates_per_gpu"] == {"0": 2, "1": 2}
    assert t["scaling_all_over_one"] > 0
    a = report["agreement"]
    assert a["block128"]["speedup_per_gpu"] == {"0": 2.0, "1": 1.5}
    assert a["block128"]["max_abs_deviation_from_gpu0"] == 0.25
    printed = capsys.readouterr().out
    assert "block128: GPU 0: 2.000, GPU 1: 1.500 (max deviation 25.00%)" in printed
