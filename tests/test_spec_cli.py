"""``cudalens spec FILE`` when some kernels of FILE cannot get a spec: the others still do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SOURCE = (
    "struct P { float a; int b; };\n"
    "__global__ void s(P p, float* out, int n) { int i = threadIdx.x; if (i < n) out[i] = p.a; }\n"
    "__global__ void scale(const float* x, float* y, float f, int n)\n{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = f * x[i];\n}\n"
    "__global__ void r(const int& n, float* out) { out[0] = n; }\n")

STRUCT_WHY = ("cannot draft a spec for parameter p of s: 'P p' is of type 'P', a struct, class or "
              "union, which cudalens cannot fill or pass (it passes numbers and pointers to "
              "numbers)")
REF_WHY = ("cannot draft a spec for parameter n of r: 'const int& n' is a reference; cudalens "
           "passes only pointers and plain numbers")


def cudalens(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudalens", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=300)


def test_unsupported_kernels_are_reported_and_the_others_drafted(tmp_path):
    src = tmp_path / "mixed.cu"
    src.write_text(SOURCE)
    proc = cudalens("spec", str(src))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == f"# kernel s: no spec: {src}:2: {STRUCT_WHY}"
    assert out[1] == ""
    assert out[2] == f"# draft inferred from {src}; review it, then save it as {src}.spec"
    assert out[3] == "kernel scale"
    assert "out y: float[n]" in out and "in x: float[n]" in out
    assert out[-1] == f"# kernel r: no spec: {src}:8: {REF_WHY}"
    err = " ".join(proc.stderr.split())  # rich may wrap long lines
    assert f"error: {src}:2: {STRUCT_WHY}" in err
    assert f"error: {src}:8: {REF_WHY}" in err
    assert err.index(":2: cannot draft") < err.index(":8: cannot draft")


def test_no_kernel_drafted_exits_2_with_every_error(tmp_path):
    src = tmp_path / "odd.cu"
    src.write_text(SOURCE.replace("__global__ void scale", "__device__ void scale"))
    proc = cudalens("spec", str(src))
    assert proc.returncode == 2
    assert proc.stdout == ""
    err = " ".join(proc.stderr.split())
    assert f"error: {src}:2: {STRUCT_WHY}" in err
    assert f"error: {src}:8: {REF_WHY}" in err
