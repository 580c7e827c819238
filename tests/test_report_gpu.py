"""``cudalens optimize --json [--report]`` on a real GPU (marker gpu).

The report's data (``cudalens.report.data.from_record`` of the run's ``--json`` record: no
matplotlib needed) has one point per verified candidate at the spec's intensity and measured
rate, the device's measured copy bandwidth, each candidate's verdict under the user's launch,
and the sanitizer's status of the original. Where matplotlib is installed (``pip install
'cudalens[report]'``; on the device machine only when ``.device`` carries it, see
``scripts/device_slim.sh``) the run also writes ``--report`` and the SVG is read back: a point
per verified candidate at those numbers, the roofs at the GPU's copy bandwidth and FP32 peak
(SMs x clock x 256 FLOP/clock/SM on sm_90). Without matplotlib that half is checked on any
machine from the record: with ``$CUDALENS_GPU_LOG_DIR`` set, the record (and the page, when
drawn) are copied there as ``report-saxpy.json``/``.html``, and ``tests/test_report.py`` renders
a committed record (``benchmarks/results/``). Skipped, with the reason, where no GPU or pycuda
is present."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
SVG = "{http://www.w3.org/2000/svg}"


def _gpu_or_skip() -> None:
    from gpu_runner.session import NoGpuError, import_driver

    try:
        import_driver()
    except NoGpuError as exc:
        pytest.skip(f"no GPU: {exc}")


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_optimize_report_on_the_gpu(tmp_path):
    _gpu_or_skip()
    from cudalens.report.data import from_record

    for name in ("saxpy.cu", "saxpy.cu.spec"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    record_path, page_path = tmp_path / "r.json", tmp_path / "r.html"
    draw = _has_matplotlib()
    done = subprocess.run([sys.executable, "-m", "cudalens", "optimize", str(tmp_path / "saxpy.cu"),
                           "--proposer", "builtin", "--budget", "8", "--json", str(record_path)]
                          + (["--report", str(page_path)] if draw else []),
                          capture_output=True, text=True, cwd=tmp_path, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    logs = os.environ.get("CUDALENS_GPU_LOG_DIR")
    if logs:
        shutil.copy(record_path, Path(logs) / "report-saxpy.json")
        if draw:
            shutil.copy(page_path, Path(logs) / "report-saxpy.html")
    record = json.loads(record_path.read_text())
    dev = record["device"]
    flops, nbytes = record["problem"]["flops"], record["problem"]["bytes_moved"]
    assert flops > 0 and nbytes == 6 * flops  # saxpy: 2 FLOPs per 12 bytes
    verified = {f"c{i}": c for i, c in enumerate(record["candidates"], 1)
                if c["verdict"]["status"] == "passed" and c["timing"]}
    # the report's data, without matplotlib
    report = from_record(record)
    assert report.device.copy_bandwidth_gbps == dev["copy_bandwidth_gbps"]
    assert report.intensity == pytest.approx(flops / nbytes)
    points = {p.key: p for p in report.points}
    assert sorted(points) == sorted(["original", *verified])
    for key, c in verified.items():
        assert points[key].timing.median_us == c["timing"]["median_us"]
        # saxpy's passes keep its launch or are grid-stride: each is a checked drop-in
        assert points[key].user_launch is not None
        assert points[key].user_launch.kind in ("same", "drop_in"), points[key].user_launch
    # the original was checked with compute-sanitizer on this machine: clean
    assert report.sanitizer is not None and report.sanitizer.state == "clean", report.sanitizer
    assert report.sanitizer.reason.startswith("the ragged case at n=262145 (")
    assert all(t in report.sanitizer.reason for t in ("memcheck", "racecheck", "initcheck"))
    failed = [c for c in record["candidates"] if c["verdict"]["status"] != "passed"]
    assert [f.status for f in report.failed] == [c["verdict"]["status"] for c in failed]
    if not draw:
        return  # the SVG half: tests/test_report.py on a committed record
    page = page_path.read_text()
    svg = ET.fromstring(page[page.index("<svg"):page.index("</svg>") + 6])
    g = {e.get("id"): e for e in svg.iter(f"{SVG}g") if e.get("id")}
    assert float(g["roof-memory"].get("data-gbps")) == dev["copy_bandwidth_gbps"]
    if tuple(dev["compute_capability"]) == (9, 0):
        assert float(g["roof-fp32"].get("data-gflops")) == pytest.approx(
            dev["sm_count"] * dev["sm_clock_mhz"] * 256 / 1000)
    assert sorted(k for k in g if k.startswith("point-")) == sorted(
        f"point-{k}" for k in ["original", *verified])
    for key, c in verified.items():
        assert float(g[f"point-{key}"].get("data-intensity")) == pytest.approx(flops / nbytes)
        assert float(g[f"point-{key}"].get("data-gflops")) == pytest.approx(
            flops / (c["timing"]["median_us"] * 1e3))
    for c in failed:
        assert c["verdict"]["status"] in page
