"""``cudalens optimize --json --report`` on a real GPU (marker gpu): the report's roofline has
one point per verified candidate of the run's ``--json`` record at the spec's intensity and
measured rate, and its roofs are that GPU's measured copy bandwidth and its FP32 peak (SMs x
clock x 256 FLOP/clock/SM on sm_90). With ``$CUDALENS_GPU_LOG_DIR`` set, the record and the
page are copied there (``report-saxpy.json``/``.html``: a recorded run for the report's
tests). Skipped, with the reason, where no GPU or pycuda is present."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="the report needs matplotlib (pip install "
                                         "'cudalens[report]')")
pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
SVG = "{http://www.w3.org/2000/svg}"


def _gpu_or_skip() -> None:
    from gpu_runner.session import NoGpuError, import_driver

    try:
        import_driver()
    except NoGpuError as exc:
        pytest.skip(f"no GPU: {exc}")


def test_optimize_report_on_the_gpu(tmp_path):
    _gpu_or_skip()
    for name in ("saxpy.cu", "saxpy.cu.spec"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    record_path, page_path = tmp_path / "r.json", tmp_path / "r.html"
    done = subprocess.run([sys.executable, "-m", "cudalens", "optimize", str(tmp_path / "saxpy.cu"),
                           "--proposer", "builtin", "--budget", "8", "--json", str(record_path),
                           "--report", str(page_path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    logs = os.environ.get("CUDALENS_GPU_LOG_DIR")
    if logs:
        shutil.copy(record_path, Path(logs) / "report-saxpy.json")
        shutil.copy(page_path, Path(logs) / "report-saxpy.html")
    record = json.loads(record_path.read_text())
    page = page_path.read_text()
    svg = ET.fromstring(page[page.index("<svg"):page.index("</svg>") + 6])
    g = {e.get("id"): e for e in svg.iter(f"{SVG}g") if e.get("id")}
    dev = record["device"]
    assert float(g["roof-memory"].get("data-gbps")) == dev["copy_bandwidth_gbps"]
    if tuple(dev["compute_capability"]) == (9, 0):
        assert float(g["roof-fp32"].get("data-gflops")) == pytest.approx(
            dev["sm_count"] * dev["sm_clock_mhz"] * 256 / 1000)
    flops, nbytes = record["problem"]["flops"], record["problem"]["bytes_moved"]
    assert flops > 0 and nbytes == 6 * flops  # saxpy: 2 FLOPs per 12 bytes
    verified = {f"point-c{i}": c for i, c in enumerate(record["candidates"], 1)
                if c["verdict"]["status"] == "passed" and c["timing"]}
    assert sorted(k for k in g if k.startswith("point-")) == sorted(["point-original", *verified])
    for gid, c in verified.items():
        assert float(g[gid].get("data-intensity")) == pytest.approx(flops / nbytes)
        assert float(g[gid].get("data-gflops")) == pytest.approx(
            flops / (c["timing"]["median_us"] * 1e3))
    for c in record["candidates"]:
        if c["verdict"]["status"] != "passed":
            assert c["verdict"]["status"] in page
