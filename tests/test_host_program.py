"""benchmarks/host_program.py: the user-style host program made from a kernel and its spec.

Three generated programs are built with the real nvcc (a host executable, no GPU needed): a
warp_per_row variant after its launch site was rewritten to the pass's launch, a tiled
transpose variant (a 2-D launch: dim3), and a warp_reduce variant with dynamic shared memory.
The launch-site rewrite of the generated warp_per_row program is asserted as text.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cudalens.host_launch import plan_launches
from cudalens.optimizer.context import make_context
from cudalens.optimizer.passes import warp_per_row
from cudalens.target import load_target

from nvcc_util import needs_nvcc, nvcc_path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from host_program import HostProgram, OutputBuffer, compare_outputs, generate  # noqa: E402

VARIANTS = ROOT / "tests" / "data" / "variants"


def _copy_kernel(src: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for f in (src, src.with_name(src.name + ".spec")):
        (folder / f.name).write_bytes(f.read_bytes())
    return folder / src.name


def _build(folder: Path) -> None:
    done = subprocess.run([nvcc_path(), "-O0", "-arch=sm_90", "-o", str(folder / "prog"),
                           "main.cu"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (folder / "prog").is_file()


def test_the_program_declares_the_sizes_launches_with_them_and_writes_the_inputs(tmp_path):
    target = load_target(VARIANTS / "warp_per_row" / "softmax_flat.cu")
    prog = generate(target)
    # small_spec's ragged sizes: rows 513 (the 1000-row spec's ragged case, capped), cols 181
    assert prog.sizes == {"rows": 513, "cols": 181}
    assert "    const int rows = 513;\n    const int cols = 181;\n" in prog.main
    assert prog.launch == "<<<(rows + 128 - 1) / 128, 128>>>"
    assert ("    softmax_flat<<<(rows + 128 - 1) / 128, 128>>>(d_in, d_out, rows, cols);"
            in prog.main)
    assert '#include "softmax_flat.cu"' in prog.main
    assert prog.outputs == (OutputBuffer("out", "float32", 513 * 181),)
    # the input is the runner's own for that case and seed: range(-8, 8) from the spec
    values = np.frombuffer(prog.inputs["in"], dtype=np.float32)
    assert values.size == 513 * 181 and -8 <= values.min() < values.max() < 8
    prog.write(tmp_path)
    assert (tmp_path / "in.in").read_bytes() == prog.inputs["in"]
    assert (tmp_path / "main.cu").read_text() == prog.main


@needs_nvcc
def test_a_warp_per_row_winner_rewrites_the_generated_launch_and_the_program_builds(tmp_path):
    src = _copy_kernel(VARIANTS / "warp_per_row" / "softmax_flat.cu", tmp_path / "ws")
    target = load_target(src)
    prog = generate(target)
    prog.write(src.parent)
    ctx = make_context(target.text, str(target.path), target.kernel.name, target.spec)
    winner = warp_per_row.apply(ctx, warps_per_block=4)
    assert (winner.launch.block, winner.launch.grid) == (("128",), ("ceil_div(rows, 4)",))
    plan = plan_launches(src.parent, target.kernel, target.spec, winner.launch,
                         texts={src: winner.source}, kernel_path=src)
    assert plan.unmapped == ()
    (edit,) = plan.edits
    assert (edit.path.name, edit.line + 1) == ("main.cu", prog.main[:prog.main.index(
        "softmax_flat<<<")].count("\n") + 1)
    assert edit.config == "<<<(rows + 128 - 1) / 128, 128>>>"
    assert edit.new == "<<<(rows + 4 - 1) / 4, 128>>>"
    for path, text in plan.new_texts().items():
        path.write_text(text)
    src.write_text(winner.source)
    assert "softmax_flat<<<(rows + 4 - 1) / 4, 128>>>(d_in, d_out, rows, cols);" in \
        (src.parent / "main.cu").read_text()
    _build(src.parent)


@needs_nvcc
@pytest.mark.parametrize("variant, launch", [
    ("tiled_transpose/yx_order_scaled.cu",
     "<<<dim3((m + 32 - 1) / 32, (n + 4 - 1) / 4), dim3(32, 4)>>>"),
    ("warp_reduce/extern_shared.cu", "<<<(n + 256 - 1) / 256, 256, 256 * 4>>>"),
])
def test_generated_programs_build_with_nvcc(tmp_path, variant, launch):
    src = _copy_kernel(VARIANTS / variant, tmp_path)
    prog = generate(load_target(src))
    assert prog.launch == launch
    prog.write(tmp_path)
    _build(tmp_path)


def test_outputs_compare_with_the_runners_tolerance(tmp_path):
    prog = generate(load_target(VARIANTS / "warp_per_row" / "softmax_flat.cu"))
    n = 513 * 181
    before = np.linspace(0.0, 1.0, n, dtype=np.float32)
    same = before * np.float32(1 + 1e-6)
    assert compare_outputs(prog, {"out": before}, {"out": same}) == ""
    off = before.copy()
    off[700] += 0.01
    text = compare_outputs(prog, {"out": before}, {"out": off})
    assert text.startswith("out[700] is 0.01753887")
    # float32's default: rtol 1e-4, atol 1e-4 x the output's scale (1.0 here)
    assert text.endswith("(rtol 0.0001, atol 0.0001); 1 of 92853 elements differ")
    missed = before.copy()
    poison = np.frombuffer(prog.inputs["out"], dtype=np.float32)  # what main.cu starts with
    assert poison.view(np.uint32)[0] == 0x7FFC7FFC and poison.size == n
    missed[32::32] = poison[32::32]  # left as the program filled it
    text = compare_outputs(prog, {"out": before}, {"out": missed})
    assert text.startswith("out[32] unwritten (expected ") and f"of {n} elements" in text
    # outputs are read back by size: a short file is an error naming it
    (tmp_path / "out.out").write_bytes(b"\0" * 8)
    with pytest.raises(ValueError, match=r"out\.out: expected 371412 bytes \(92853 x float32\)"):
        HostProgram.read_outputs(prog, tmp_path)


@needs_nvcc
def test_the_gpu_check_script_builds_the_program_before_and_logs_it(tmp_path):
    """benchmarks/check_host_programs.py --build-only: the path the H200 run takes up to the
    first run of the program (the generated program built with nvcc in a scratch workspace),
    with its log and JSON."""
    import json

    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "check_host_programs.py"),
                           "--build-only", "--only", "gemv_sizet", "--out", str(tmp_path),
                           "--nvcc", nvcc_path()],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (log,) = tmp_path.glob("h200-host-programs-*.log")
    text = log.read_text()
    assert ("warp_per_row/gemv_sizet.cu: matvec, sizes {'rows': 513, 'cols': 421}, launch "
            "<<<(rows + 128 - 1) / 128, 128>>>") in text
    assert text.rstrip().endswith("totals: built 1")
    (record,) = json.loads(log.with_suffix(".json").read_text())
    assert (record["kernel"], record["verdict"], record["launch_before"]) == (
        "matvec", "built", "<<<(rows + 128 - 1) / 128, 128>>>")


@needs_nvcc
def test_a_control_that_faults_is_the_controls_finding_not_a_failed_check(tmp_path):
    """H200, 2026-12-02: the accepted column-tile kernel under the program's original 1D launch
    ended with "an illegal memory access"; that is what a kernel-only apply ships (the finding
    the control exists for), so the check records it and judges the rewritten program by
    ``after``."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import check_host_programs  # noqa: PLC0415

    prog = generate(load_target(VARIANTS / "warp_per_row" / "softmax_flat.cu"))
    (tmp_path / "main.cu").write_text(
        '#include <cstdio>\nint main() { fprintf(stderr, "main.cu:3: an illegal memory access '
        'was encountered\\n"); return 1; }\n')
    words = check_host_programs._control(tmp_path, prog, {}, nvcc_path())  # noqa: SLF001
    assert words == ("kernel-only apply: FAULTS: prog_control exited with 1: main.cu:3: an "
                     "illegal memory access was encountered")
