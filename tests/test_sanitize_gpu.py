"""compute-sanitizer on a real GPU (marker gpu): memcheck finds the out-of-bounds read of a
saxpy without its bounds check (tests/data/sanitizer/oob_read.cu) at its line, the examples'
saxpy has no finding that blocks it, and ``cudalens check --gpu`` prints racecheck's race in a
block reduction that misses its barriers below stride 32 (tests/data/sanitizer/racy_reduce.cu)
at FILE:LINE:COL and exits 1. Skipped, with the reason, without a GPU or compute-sanitizer.

Expected time on an H200: about 60-90 s (each tool's run starts Python, compiles the kernel
with nvcc and launches it once under the tool; the CLI test also starts a local runner)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_runner.sanitize import find_sanitizer, sanitize_variant
from gpu_runner.sanitizer_text import OOB_READ, OOB_WRITE, RACE

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "sanitizer"


def _line_of(path: Path, marker: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().split("\n"), 1) if marker in ln)


def _request(path: Path):
    """(problem, variant) of ``path``'s kernel at the sanitizer's small sizes."""
    from cudalens.sanitize_check import small_spec
    from cudalens.spec.resolve import build_problem, build_variant
    from cudalens.target import load_target
    from gpu_runner.session import GpuSession, NoGpuError

    if find_sanitizer() is None:
        pytest.skip("compute-sanitizer is not on PATH (nor in $CUDA_HOME/bin or "
                    "/usr/local/cuda/bin)")
    try:
        session = GpuSession(0)
    except NoGpuError as exc:
        pytest.skip(f"no GPU: {exc}")
    try:
        sm = session.device.get_attribute(session.drv.device_attribute.MULTIPROCESSOR_COUNT)
    finally:
        session.close()
    target = load_target(path)
    spec = small_spec(target.spec)
    return build_problem(spec, target.kernel), build_variant(
        "original", target.text, target.kernel.qualified_name, spec, spec.launch, sm)


def test_memcheck_reports_the_out_of_bounds_read_at_its_line():
    path = DATA / "oob_read.cu"
    problem, variant = _request(path)
    report = sanitize_variant(problem, variant, tools=("memcheck",))
    [run] = report.runs
    own = [f for f in run.findings if f.own]
    assert own, run
    assert {f.kind for f in own} <= {OOB_READ, OOB_WRITE} and OOB_READ in {f.kind for f in own}
    assert {f.line for f in own} == {_line_of(path, "// OOB")}, own
    assert report.case == "ragged" and report.blocking


def test_the_examples_saxpy_has_no_blocking_finding():
    problem, variant = _request(ROOT / "examples" / "saxpy.cu")
    report = sanitize_variant(problem, variant)
    assert [run.tool for run in report.runs] == ["memcheck", "racecheck", "initcheck",
                                                 "synccheck"]
    assert report.blocking == (), report.findings
    assert not any(f.own for f in report.findings), report.findings
    assert all(run.note == "" for run in report.runs), report.runs


def test_check_gpu_prints_the_race_at_its_line():
    path = DATA / "racy_reduce.cu"
    _request(path)  # skips without a GPU or compute-sanitizer
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    env.pop("CUDALENS_RUNNER_URL", None)
    done = subprocess.run([sys.executable, "-m", "cudalens", "check", "--gpu", str(path)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    print(done.stdout, done.stderr)
    assert done.returncode == 1, done.stderr + done.stdout
    line = _line_of(path, "// RACE")
    races = [ln for ln in done.stdout.splitlines() if ": racecheck: race:" in ln]
    assert races and all(ln.startswith(f"{path}:{line}:13: error: racecheck: race: ")
                         for ln in races), done.stdout
    assert "block_sum: " in done.stdout and "at n=262145" in done.stdout
