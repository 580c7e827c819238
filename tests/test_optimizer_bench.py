"""The GPU-free parts of ``benchmarks/bench_optimizer.py``: the block space Kernel Tuner
searches, the spec grid expressed as Kernel Tuner's problem size (or why it cannot be), the
PyTorch operator table covering every example, and the clear failure when a package is
missing. The benchmark itself needs a GPU, kernel_tuner and torch."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

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
