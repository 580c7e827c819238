"""A draft gets the checks a saved spec gets (``cudalens spec`` shows it and says why; ``plan``
refuses it), and ``plan`` refuses a kernel whose body does not parse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cudalens.target import DraftRefused, load_target

ROOT = Path(__file__).resolve().parent.parent

# 2D grid of 32 x 8 blocks over a default of 1 << 24 rows: grid.y would be 2097152
COPY4 = """\
__global__ void copy4(const float *x, float *y, int row, int col) {
  int gx = blockIdx.x * blockDim.x + threadIdx.x;
  int gy = blockIdx.y * blockDim.y + threadIdx.y;
  if (gx * 4 < col && gy < row) {
    float4 v = reinterpret_cast<const float4 *>(x)[(gy * col) / 4 + gx];
    reinterpret_cast<float4 *>(y)[(gy * col) / 4 + gx] = v;
  }
}
"""
SCALE = """\
__global__ void k(float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * y[i];
}
"""


def cudalens(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudalens", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=300)


def _grid_line(spec) -> int:
    from cudalens.spec.writer import format_spec

    lines = format_spec(spec).splitlines()
    return 2 + next(i for i, t in enumerate(lines) if t.startswith("grid = "))  # header first


def test_a_draft_the_parser_refuses_is_refused_when_loaded(tmp_path):
    src = tmp_path / "copy4.cu"
    src.write_text(COPY4)
    with pytest.raises(DraftRefused) as info:
        load_target(src)
    line = _grid_line(info.value.spec)
    assert str(info.value).startswith(
        f"{src}: the draft spec inferred for copy4 fails the checks a saved spec gets, at its "
        f"line {line} (as saved in {src}.spec): expected grid.y <= 65535 (the CUDA limit), "
        f"found 2097152 in the nominal run")
    assert str(info.value).endswith(f"; print it with 'cudalens spec {src}', fix that line and "
                                    f"save it as {src}.spec")
    saved = tmp_path / "copy4.cu.spec"  # the same words as the saved draft gets
    from cudalens.spec.writer import format_spec
    from cudalens.target import draft_header

    saved.write_text(draft_header(src) + "\n" + format_spec(info.value.spec))
    proc = cudalens("plan", str(src))
    assert proc.returncode == 2
    assert f"error: {saved}:{line}: expected grid.y <= 65535 (the CUDA limit), found 2097152" \
        in " ".join(proc.stderr.split())


def test_spec_prints_the_refused_draft_and_plan_exits_2(tmp_path):
    src = tmp_path / "copy4.cu"
    src.write_text(COPY4)
    proc = cudalens("spec", str(src))
    assert proc.returncode == 2
    out = proc.stdout.splitlines()
    assert out[0] == f"# draft inferred from {src}; review it, then save it as {src}.spec"
    assert out[1] == "kernel copy4"
    grid = next(i for i, t in enumerate(out) if t.startswith("grid = "))
    err = " ".join(proc.stderr.split())
    assert f"error: {src}: the draft spec inferred for copy4 fails the checks a saved spec " \
           f"gets, at its line {grid + 1} (as saved in {src}.spec): expected grid.y <= 65535" in err
    plan = cudalens("plan", str(src))
    assert plan.returncode == 2
    assert plan.stdout == ""
    assert f"at its line {grid + 1} (as saved in {src}.spec): expected grid.y <= 65535" in \
        " ".join(plan.stderr.split())


@pytest.mark.parametrize("broken,where", [
    (SCALE.replace("threadIdx.x;", "threadIdx.x"), "2:48"),  # a missing ';'
    (SCALE.replace("int n)", "int n"), "1:34"),  # a missing ')': the body is read as nothing
])
def test_plan_refuses_a_kernel_that_does_not_parse(tmp_path, broken, where):
    src = tmp_path / "k.cu"
    src.write_text(broken)
    proc = cudalens("plan", str(src))
    assert proc.returncode == 2
    assert proc.stdout == ""
    err = " ".join(proc.stderr.split())
    assert err.startswith(f"error: {src}:{where}: the file does not parse as C++ from here, "
                          f"inside kernel k (lines 1-")
    assert err.endswith(f"fix the syntax first (cudalens check {src} shows the compiler's "
                        f"errors)")


def test_plan_warns_of_a_parse_error_outside_the_kernel(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(SCALE + "int f( {\n")
    proc = cudalens("plan", str(src))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("plan for k in ")
    assert " ".join(proc.stderr.split()) == (
        f"warning: {src}:5:1: the file does not parse as C++ from here (outside kernel k); "
        f"the plan may be wrong (cudalens check {src} shows the compiler's errors)")
