"""The kernel report (cudalens.report): built from a recorded H200 run, read back from its SVG.

The recorded run is benchmarks/results/h200-examples-2026-11-30-2230a02.json (cudalens
optimize on examples/, every evaluation kept). Points are read back twice: their data-*
attributes (the numbers the chart was given) and their pixel positions (where matplotlib drew
them), which must be those numbers on the chart's log scale.
"""

from __future__ import annotations

import copy
from typing import Optional
import json
import math
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="the report needs matplotlib (pip install "
                                         "'cudalens[report]')")

from click.testing import CliRunner  # noqa: E402

from cudalens.cli import main  # noqa: E402
from cudalens.report.chart import roofline_svg  # noqa: E402
from cudalens.report.data import ReportInputError, from_record, pick_run  # noqa: E402
from cudalens.report.page import CSP, report_html  # noqa: E402
from gpu_runner.report import Speedup  # noqa: E402

ROOT = Path(__file__).absolute().parent.parent
RECORDED = ROOT / "benchmarks" / "results" / "h200-examples-2026-11-30-2230a02.json"
SVG = "{http://www.w3.org/2000/svg}"
XLINK_X = "x"


def recorded() -> dict:
    return json.loads(RECORDED.read_text())


def run_of(kernel: str) -> dict:
    return pick_run(recorded(), kernel, str(RECORDED))


def groups(svg: str) -> dict[str, ET.Element]:
    tree = ET.fromstring(svg)
    return {g.get("id"): g for g in tree.iter(f"{SVG}g") if g.get("id")}


def marker_xy(group: ET.Element) -> tuple[float, float]:
    (use,) = list(group.iter(f"{SVG}use"))
    return float(use.get("x")), float(use.get("y"))


def test_saxpy_points_are_the_verified_candidates_at_their_intensity_and_rate():
    run = run_of("saxpy")
    base = run["baseline"]
    svg = roofline_svg(from_record(run))
    g = groups(svg)
    points = {k: v for k, v in g.items() if k.startswith("point-")}
    verified = [(i, c) for i, c in enumerate(run["candidates"], 1)
                if c["verdict"]["status"] == "passed" and c["timing"]]
    assert sorted(points) == sorted(["point-original"] + [f"point-c{i}" for i, _ in verified])
    assert len(verified) == 4
    # saxpy: 2 FLOPs per element over 12 bytes (x read, y read and written, float32)
    intensity = base["gflops"] / base["achieved_gbps"]
    assert intensity == pytest.approx(2 / 12, rel=1e-9)
    want = {"point-original": base["gflops"]}
    want.update({f"point-c{i}": c["timing"]["gflops"] for i, c in verified})
    for gid, rate in want.items():
        assert float(points[gid].get("data-intensity")) == pytest.approx(intensity, rel=1e-12)
        assert float(points[gid].get("data-gflops")) == pytest.approx(rate, rel=1e-12)
    # pixel positions: one column (the same intensity), heights on one log scale
    xy = {gid: marker_xy(points[gid]) for gid in want}
    assert len({round(x, 3) for x, _ in xy.values()}) == 1
    (a, ya), (b, yb) = [(gid, xy[gid][1]) for gid in ("point-original", "point-c4")]
    per_decade = (ya - yb) / (math.log10(want[b]) - math.log10(want[a]))
    assert per_decade > 0  # faster is higher (SVG y grows downward)
    for gid, (_, y) in xy.items():
        assert y == pytest.approx(ya - per_decade * math.log10(want[gid] / want[a]), abs=0.05)
    # the winner is the run's winner
    winner = [gid for gid, p in points.items() if p.get("data-role") == "winner"]
    assert winner == ["point-c4"]
    assert points["point-c4"].get("data-label") == run["winner"]["label"] == \
        "restrict vec4+gridstride block=1024 grid=full"


def test_the_roofs_are_the_devices_numbers():
    run = run_of("saxpy")
    g = groups(roofline_svg(from_record(run)))
    assert float(g["roof-memory"].get("data-gbps")) == run["device"]["copy_bandwidth_gbps"] \
        == 3973.289627411868
    # H200: 132 SMs x 1980 MHz x 256 FLOP/clock/SM (128 FP32 FMA lanes)
    assert float(g["roof-fp32"].get("data-gflops")) == pytest.approx(132 * 1980 * 256 / 1000)
    assert not [k for k in g if k.startswith("roof-fp16") or k.startswith("roof-bf16")]
    # a float16 kernel also gets the FP16 roofs (CUDA cores x2 of FP32; tensor cores dense)
    half = dict(run, problem={"bytes_moved": 6, "flops": 2, "element_types": ["float16"]})
    h = groups(roofline_svg(from_record(half)))
    assert float(h["roof-fp16"].get("data-gflops")) == pytest.approx(132 * 1980 * 512 / 1000)
    assert float(h["roof-fp16_tensor"].get("data-gflops")) == \
        pytest.approx(132 * 1980 * 4096 / 1000)
    assert float(h["point-original"].get("data-intensity")) == pytest.approx(2 / 6)


def test_the_memory_roof_passes_through_intensity_times_bandwidth():
    """The roof's drawn line, read in pixels, meets the point's column at intensity x BW."""
    run = run_of("matmul_naive")
    report = from_record(run)
    g = groups(roofline_svg(report))
    bw = run["device"]["copy_bandwidth_gbps"]
    path = g["roof-memory"].find(f".//{SVG}path").get("d").replace("M", " ").replace("L", " ")
    (x0, y0, x1, y1) = [float(v) for v in path.split()[:4]]
    px, py = marker_xy(g["point-original"])
    fp32 = float(g["roof-fp32"].get("data-gflops"))
    # on a log-log chart with equal decades the memory roof has slope 1: its pixel slope is
    # the ratio of the axes' pixels per decade; find that ratio from the point and the roofs
    per_decade_y = (py - float(g["roof-fp32"].find(f".//{SVG}path").get("d").split()[2])) / \
        (math.log10(fp32) - math.log10(float(g["point-original"].get("data-gflops"))))
    y_at_px = y0 + (y1 - y0) * (px - x0) / (x1 - x0)  # the roof's height at the point's column
    roof_there = float(g["point-original"].get("data-gflops")) * \
        10 ** ((py - y_at_px) / per_decade_y)
    assert roof_there == pytest.approx(report.intensity * bw, rel=1e-3)


def test_a_kernel_without_flops_is_shown_against_the_copy_bandwidth():
    run = run_of("transpose_naive")
    assert run["baseline"]["gflops"] == 0.0
    report = from_record(run)
    assert report.intensity is None
    g = groups(roofline_svg(report))
    pts = {k: v for k, v in g.items() if k.startswith("point-")}
    assert len(pts) == 1 + sum(c["verdict"]["status"] == "passed" for c in run["candidates"])
    rates = {k: float(v.get("data-gbps")) for k, v in pts.items()}
    assert rates["point-original"] == pytest.approx(run["baseline"]["achieved_gbps"])
    assert "roof-fp32" not in g and float(g["roof-memory"].get("data-gbps")) == \
        run["device"]["copy_bandwidth_gbps"]
    # linear y: pixel height proportional to GB/s from the x axis (y = 0)
    ys = {k: marker_xy(v)[1] for k, v in pts.items()}
    (k1, k2) = sorted(rates)[:2]
    per_gbps = (ys[k1] - ys[k2]) / (rates[k2] - rates[k1])
    zero = ys[k1] + per_gbps * rates[k1]
    for k in pts:
        assert ys[k] == pytest.approx(zero - per_gbps * rates[k], abs=0.05)


def failing_saxpy() -> dict:
    run = copy.deepcopy(run_of("saxpy"))
    bad = run["candidates"][1]
    bad["verdict"] = {"variant": "c9", "status": "mismatch", "mismatch": None,
                      "reason": "case 'nominal' seed 1: y[17] is 3.5, the original wrote 2.5"}
    bad["timing"], bad["speedup"] = None, None
    return run


def test_failed_candidates_are_listed_with_their_verdicts_and_not_plotted():
    run = failing_saxpy()
    report = from_record(run)
    assert [(f.label, f.status) for f in report.failed] == [
        (run["candidates"][1]["label"], "mismatch")]
    page = report_html(report)
    aside = page[page.index('<ul class="failed" id="failed">'):]
    aside = aside[:aside.index("</ul>")]
    assert run["candidates"][1]["label"] in aside and "mismatch" in aside
    assert "y[17] is 3.5, the original wrote 2.5" in aside
    g = groups(roofline_svg(report))
    assert "point-c2" not in g and "point-c1" in g and "point-c3" in g


def test_the_page_is_self_contained_and_themed():
    page = report_html(from_record(run_of("saxpy")))
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in page
    assert CSP.startswith("default-src 'none'")
    for external in ("<script", "<link", "<img", "src=", "url(http", "@import"):
        assert external not in page
    assert "var(--vscode-editor-foreground" in page and "currentColor" in page
    assert page.count("<svg") == 1
    # the table: every variant with its median, CI and speedup interval
    row = page[page.index('<tr id="row-c4">'):]
    row = row[:row.index("</tr>")]
    c4 = run_of("saxpy")["candidates"][3]
    t, s = c4["timing"], c4["speedup"]
    assert f"{t['median_us']:,.1f} us" in row
    assert f"{t['median_ci_low_us']:,.2f}-{t['median_ci_high_us']:,.2f}" in row
    assert f"{s['value']:.2f}x [{s['ci_low']:.2f}, {s['ci_high']:.2f}]" in row
    assert "winner" in row
    # the search's history: every variant of every evaluation
    run = run_of("saxpy")
    n = sum(len(e["variants"]) for e in run["evaluations"])
    assert f"{len(run['evaluations'])} runner evaluation(s), {n} variant timing(s)" in page
    assert "Not recorded: this record was written before runs kept" in page  # 2026-11-30
    assert "Nsight Compute" not in page


def sanitizer_section(page: str) -> str:
    sec = page[page.index('<section id="sanitizer">'):]
    return sec[:sec.index("</section>")]


def test_the_sanitizer_status_gets_its_section():
    """clean / findings with their lines / not run and why, as the run's record keeps them
    (cudalens.sanitizer_status); a record from before says it was not recorded."""
    clean = {"state": "clean", "reason": "the ragged case at n=262145 (memcheck 2.1 s, "
                                          "racecheck 3.4 s)", "findings": []}
    report = from_record(dict(run_of("saxpy"), sanitizer=clean))
    assert report.sanitizer.state == "clean"
    assert ('<p data-state="clean">Clean: no race, invalid or out-of-bounds access, '
            'uninitialized read or barrier error on the ragged case at n=262145 (memcheck 2.1 s, '
            'racecheck 3.4 s).</p>') in sanitizer_section(report_html(report))
    found = {"state": "findings", "reason": "the ragged case at n=262145", "findings": [
        {"tool": "memcheck", "kind": "cuda api error", "summary": "cudaErrorInvalidValue",
         "blocking": False, "line": None, "column": None, "where": "saxpy.cu"},
        {"tool": "initcheck", "kind": "uninitialized read", "summary": "read of 4 bytes",
         "blocking": False, "line": 9, "column": 5, "where": "saxpy.cu:9:5"}]}
    sec = sanitizer_section(report_html(from_record(dict(run_of("saxpy"), sanitizer=found))))
    assert '<p data-state="findings">2 finding(s) on the ragged case at n=262145:</p>' in sec
    assert ("<tr><td>saxpy.cu:9:5</td><td>initcheck</td><td>uninitialized read</td>"
            '<td class="">warning</td><td>read of 4 bytes</td></tr>') in sec
    off = {"state": "not_run", "reason": "--no-sanitize was given", "findings": []}
    sec = sanitizer_section(report_html(from_record(dict(run_of("saxpy"), sanitizer=off))))
    assert ('<p class="bad" data-state="not_run">Not run: --no-sanitize was given. The original '
            'was not checked for races and memory errors.</p>') in sec
    sec = sanitizer_section(report_html(from_record(run_of("saxpy"))))
    assert 'data-state="unknown">Not recorded' in sec
    with pytest.raises(ReportInputError, match=r"'sanitizer': expected an object with 'state' "
                                               r"one of clean, findings, not_run"):
        from_record(dict(run_of("saxpy"), sanitizer=[{"tool": "memcheck"}]))


def test_the_profile_gets_its_section():
    profile = {"subject": "abc", "label": "c4", "created": "2026-11-30T00:00:00Z", "reason": "",
               "profile": {"kernel": "saxpy", "achieved_occupancy_pct": 61.25,
                           "dram_throughput_pct": 83.4, "tool": "Nsight Compute",
                           "stalls": [{"reason": "long scoreboard", "cycles_per_issue": 9.81,
                                       "share_pct": 72.0}]}}
    page = report_html(from_record(dict(run_of("saxpy"), profile=profile)))
    assert "<h2>Nsight Compute: c4</h2>" in page
    assert '<td class="num">61.2%</td>' in page and "83.4% of peak" in page
    assert "<td>long scoreboard</td><td class=\"num\">9.81</td><td class=\"num\">72%</td>" in page


def test_pick_run_errors_say_what_was_expected():
    with pytest.raises(ReportInputError, match=r"holds runs of 13 kernels \(saxpy, "):
        pick_run(recorded(), None, "r.json")
    with pytest.raises(ReportInputError, match=r"no run of kernel 'nope'; it holds saxpy, "):
        pick_run(recorded(), "nope", "r.json")
    with pytest.raises(ReportInputError, match=r"found a JSON list"):
        pick_run([], None, "r.json")
    with pytest.raises(ReportInputError, match=r"r.json: 'device': expected a DeviceInfo"):
        from_record(dict(run_of("saxpy"), device={"name": "x"}), "r.json")


# -- the CLI ---------------------------------------------------------------------------------

def test_cli_report_writes_the_page_of_a_recorded_run(tmp_path):
    out = tmp_path / "sub" / "saxpy.html"
    res = CliRunner().invoke(main, ["report", str(RECORDED), "--kernel", "saxpy", "-o",
                                    str(out)])
    assert res.exit_code == 0, res.output
    assert res.output == f"wrote {out}\n"
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<h1>saxpy</h1>" in page
    assert page.count('id="point-') == 5


def test_cli_report_defaults_to_the_current_folder_and_one_file_per_kernel(tmp_path,
                                                                          monkeypatch):
    src = tmp_path / "records" / "r.json"
    src.parent.mkdir()
    src.write_text(json.dumps(failing_saxpy()))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    res = CliRunner().invoke(main, ["report", str(src)])
    assert res.exit_code == 0, res.output
    page = (work / "r.html").read_text()
    assert '<ul class="failed" id="failed">' in page and "mismatch" in page
    assert not (src.parent / "r.html").exists()  # never beside the record (a checkout's file)
    # with --kernel, the kernel's name is in the file's: a second kernel does not overwrite
    res = CliRunner().invoke(main, ["report", str(RECORDED), "--kernel", "saxpy"])
    assert res.exit_code == 0, res.output
    assert (work / f"{RECORDED.stem}-saxpy.html").read_text().count('id="point-') == 5


@pytest.mark.parametrize("text,message", [
    ("not json", "expected a JSON results record from 'cudalens optimize --json', found text "
                 "that is not JSON (line 1, column 1"),
    ('{"name": "x"}', "found a JSON object without 'kernel', 'device', 'baseline', "
                      "'candidates'"),
    ("[1, 2]", "found a JSON list"),
])
def test_cli_report_refuses_what_is_not_a_results_record(tmp_path, text, message):
    src = tmp_path / "r.json"
    src.write_text(text)
    res = CliRunner().invoke(main, ["report", str(src), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 2
    assert message in " ".join(res.output.split())
    assert not (tmp_path / "r.html").exists()


def test_cli_report_missing_file_and_several_kernels(tmp_path):
    res = CliRunner().invoke(main, ["report", str(tmp_path / "none.json")])
    assert res.exit_code == 2 and "none.json: no such file" in res.output
    res = CliRunner().invoke(main, ["report", str(RECORDED), "-o", str(tmp_path / "x.html")])
    assert res.exit_code == 2 and "name one with --kernel" in " ".join(res.output.split())


def test_cli_report_without_matplotlib_says_how_to_install_it(tmp_path, monkeypatch):
    src = tmp_path / "r.json"
    src.write_text(json.dumps(run_of("saxpy")))
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    res = CliRunner().invoke(main, ["report", str(src)])
    assert res.exit_code == 2
    assert "pip install 'cudalens[report]'" in " ".join(res.output.split())


def test_optimize_report_against_the_model_service_matches_its_json(tmp_path):
    """``cudalens optimize --json --report`` in one run: the page has one point per verified
    candidate of the JSON record, at the record's spec intensity, and the model's own device
    name (the model says it is not a measurement)."""
    import os
    import subprocess

    sys.path.insert(0, str(ROOT / "tests" / "data" / "lsp"))
    from live_fake_runner import fake_runner_process

    token = "report-model-token-0123456789"
    for name in ("saxpy.cu", "saxpy.cu.spec"):
        (tmp_path / name).write_text((ROOT / "examples" / name).read_text())
    env = dict(os.environ, CUDALENS_RUNNER_TOKEN=token)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [x for x in [env.get("PYTHONPATH")] if x])
    out, page_path = tmp_path / "r.json", tmp_path / "out" / "r.html"
    with fake_runner_process(tmp_path, token, backend="model") as url:
        done = subprocess.run([sys.executable, "-m", "cudalens", "optimize",
                               str(tmp_path / "saxpy.cu"), "--proposer", "builtin", "--budget",
                               "8", "--repetitions", "5", "--json", str(out), "--report",
                               str(page_path)],
                              capture_output=True, text=True, cwd=tmp_path, timeout=300,
                              env=dict(env, CUDALENS_RUNNER_URL=url))
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["problem"]["element_types"] == ["float32", "int32"]
    assert record["problem"]["flops"] * 6 == record["problem"]["bytes_moved"]  # 2 FLOP / 12 B
    page = page_path.read_text()
    assert "model GPU (not a measurement)" in page
    svg = page[page.index("<svg"):page.index("</svg>") + 6]
    pts = {k: v for k, v in groups(svg).items() if k.startswith("point-")}
    verified = [f"point-c{i}" for i, c in enumerate(record["candidates"], 1)
                if c["verdict"]["status"] == "passed" and c["timing"]]
    assert sorted(pts) == sorted(["point-original"] + verified)
    for i, c in enumerate(record["candidates"], 1):
        if f"point-c{i}" in pts:
            p = pts[f"point-c{i}"]
            assert float(p.get("data-intensity")) == pytest.approx(2 / 12)
            assert float(p.get("data-gflops")) == pytest.approx(
                record["problem"]["flops"] / (c["timing"]["median_us"] * 1e3))
    assert [k for k, v in pts.items() if v.get("data-role") == "winner"] == \
        [f"point-c{i}" for i, c in enumerate(record["candidates"], 1)
         if c["label"] == record["winner"]["label"]][:1]


def test_optimize_report_path_is_checked_before_running(tmp_path):
    for name in ("saxpy.cu", "saxpy.cu.spec"):
        (tmp_path / name).write_text((ROOT / "examples" / name).read_text())
    res = CliRunner().invoke(main, ["optimize", str(tmp_path / "saxpy.cu"), "--report",
                                    str(tmp_path / "saxpy.cu.spec")])
    assert res.exit_code == 2
    assert "it is the kernel's source or spec file" in " ".join(res.output.split())
    (tmp_path / "d").mkdir()
    res = CliRunner().invoke(main, ["optimize", str(tmp_path / "saxpy.cu"), "--report",
                                    str(tmp_path / "d")])
    assert res.exit_code == 2


def test_the_zoom_beside_the_roofline_shows_each_variant_under_the_attainable_rate():
    run = run_of("saxpy")
    g = groups(roofline_svg(from_record(run)))
    bw = run["device"]["copy_bandwidth_gbps"]
    assert float(g["zoom-roof"].get("data-gflops")) == pytest.approx(bw * 2 / 12)
    for key in ("original", "c1", "c2", "c3", "c4"):
        assert g[f"zoom-{key}"].get("data-gflops") == g[f"point-{key}"].get("data-gflops")
    # one column each, left to right in the table's order
    xs = [marker_xy(g[f"zoom-{k}"])[0] for k in ("original", "c1", "c2", "c3", "c4")]
    assert xs == sorted(xs) and len(set(xs)) == 5


# -- drop-in or a new launch (issue 17) ---------------------------------------------------------

LAUNCH_SITES = ROOT / "benchmarks" / "results" / "h200-launch-sites-2026-12-01-b9f427e.json"


def launch_run(kernel: str) -> dict:
    """An H200 optimize record (check_launch_sites.py, 2026-12-01) whose candidates carry
    ``launch_change`` and ``drop_in``."""
    return json.loads(LAUNCH_SITES.read_text())[kernel]


def table_row(page: str, key: str) -> str:
    row = page[page.index(f'<tr id="row-{key}">'):]
    return row[:row.index("</tr>")]


def test_each_candidate_says_drop_in_or_needs_a_new_launch_with_the_launch():
    run = launch_run("layernorm")
    report = from_record(run)
    views = {p.key: p.user_launch for p in report.points}
    assert views["original"] is None
    # c1, the winner: the grid-stride warp-per-row form, right under the user's launch too
    c1 = views["c1"]
    assert (c1.kind, c1.launch) == ("drop_in", "block = 128, grid = ceil_div(rows, 4)")
    assert c1.drop_in_speedup.value == pytest.approx(4.096897695886599)
    assert c1.words == "4.10x as a drop-in; 15.58x with block = 128, grid = ceil_div(rows, 4)"
    # c2: the plain warp-per-row form writes 1 row in 32 under the user's launch
    c2 = views["c2"]
    assert (c2.kind, c2.drop_in_speedup) == ("new_launch", None)
    assert c2.words == "needs a new launch: 13.58x with block = 128, grid = ceil_div(rows, 4)"
    assert c2.reason.startswith("unwritten: case 'nominal', seed 1: output 'y' was not written "
                                "at index 524288")
    page = report_html(report)
    head = page[page.index('<p id="verdict">'):page.index("</p>", page.index('id="verdict"'))]
    assert ('Under your launch: 4.10x as a drop-in; 15.58x with block = 128, grid = '
            'ceil_div(rows, 4).') in head
    assert "best-drop-in" not in head  # the winner is a drop-in itself
    assert "<th>under your launch</th>" in page
    assert '<td class="launch" data-kind="drop_in"><b>drop-in</b>: 4.10x as a drop-in; 15.58x' \
        in table_row(page, "c1")
    c2_row = table_row(page, "c2")
    assert '<td class="launch bad" data-kind="new_launch"><b>needs a new launch</b>: needs a ' \
           'new launch: 13.58x with block = 128, grid = ceil_div(rows, 4)' in c2_row
    assert "under your launch: unwritten: case &#x27;nominal&#x27;" in c2_row
    assert '<td class="launch">your launch</td>' in table_row(page, "original")


def test_a_winner_that_needs_a_new_launch_names_the_fastest_drop_in():
    run = copy.deepcopy(launch_run("layernorm"))
    c2 = run["candidates"][1]  # needs a new launch: 13.58x
    run["winner"] = {"label": c2["label"], "timing": c2["timing"]}
    report = from_record(run)
    assert report.winner.key == "c2"
    assert report.best_drop_in.key == "c1"  # 4.10x under the user's launch, beats c5's 3.76x
    page = report_html(report)
    head = page[page.index('<p id="verdict">'):page.index("</p>", page.index('id="verdict"'))]
    assert ("Under your launch: needs a new launch: 13.58x with block = 128, grid = "
            "ceil_div(rows, 4).") in head
    assert ("Best drop-in (no launch change): <b>restrict warp-per-row+gridstride unroll=4 "
            "block=128</b>, 4.10x [4.09, 4.10].") in head


def test_a_candidate_keeping_the_launch_is_a_drop_in_and_old_records_say_not_recorded():
    run = copy.deepcopy(launch_run("transpose"))
    c5 = run["candidates"][4]
    c5["launch_change"], c5["drop_in"] = None, {"ok": True, "own": True,
                                                "verdict": c5["verdict"],
                                                "timing": c5["timing"], "speedup": c5["speedup"]}
    c4 = run["candidates"][3]
    c4["drop_in"] = None  # not run under the user's launch
    del run["candidates"][2]["launch_change"], run["candidates"][2]["drop_in"]
    report = from_record(run)
    views = {p.key: p.user_launch for p in report.points}
    assert (views["c5"].kind, views["c5"].words, views["c5"].launch) == (
        "same", "2.02x as a drop-in", "")
    assert views["c4"].kind == "not_checked"
    assert views["c4"].words == ("2.82x with block = 32, 32, grid = ceil_div(cols, 32), "
                                 "ceil_div(rows, 32) (not checked under your launch)")
    assert views["c3"] is None
    page = report_html(report)
    assert '<td class="launch muted">not recorded</td>' in table_row(page, "c3")
    assert "<b>not checked under your launch</b>" in table_row(page, "c4")
    # the recorded examples run predates the check: no candidate claims either
    assert all(p.user_launch is None for p in from_record(run_of("saxpy")).points)


def test_a_stored_run_carries_the_same_launch_verdicts():
    """The webview's report (from_run_record, what the language server stores) words a
    candidate as the --json record's report does."""
    from gpu_runner.report import CandidateResult, CompileReport, DeviceInfo, Timing, Verdict
    from cudalens.report.data import from_run_record
    from cudalens.store.records import CandidateRecord, LaunchRecord, RunRecord

    from gpu_runner.service.schema import decode

    run = launch_run("layernorm")

    def result(c: dict) -> CandidateResult:
        return CandidateResult(CompileReport("c", True), decode(Verdict, c["verdict"]),
                               decode(Optional[Timing], c["timing"]),
                               decode(Optional[Speedup], c["speedup"]))

    cands = []
    for i, c in enumerate(run["candidates"][:3]):
        d = c["drop_in"]
        cands.append(CandidateRecord(
            id=f"id{i}", label=c["label"], explanation="", passes=tuple(c["passes"]),
            launch=LaunchRecord(tuple(c["launch"]["block"]), tuple(c["launch"]["grid"])),
            source="", result=result(c), launch_changed=True,
            drop_in=result(d)))
    stored = RunRecord(
        key="k", path="/w/layernorm.cu", kernel="layernorm_rows", base_sha="s",
        device=decode(DeviceInfo, run["device"]), baseline=decode(Timing, run["baseline"]),
        baseline_compile=CompileReport("baseline", True), bytes_moved=1, flops=1,
        threads_per_block=256, shared_bytes=0, spec_origin="layernorm.cu.spec",
        provenance="test", created="2026-12-02T07:00:00+00:00", candidates=tuple(cands))
    report = from_run_record(stored)
    words = {p.key: p.user_launch.words for p in report.points if p.user_launch}
    from_json = {p.key: p.user_launch.words for p in from_record(run).points
                 if p.user_launch and p.key in words}
    assert words == from_json
    assert words["c1"] == "4.10x as a drop-in; 15.58x with block = 128, grid = ceil_div(rows, 4)"
    assert words["c2"].startswith("needs a new launch: 13.58x")


def test_a_failed_candidate_with_a_mismatch_and_a_nan_is_listed():
    """A real verdict (the H200's, under the user's launch) has a mismatch whose actual value is
    the wire's "NaN": the report reads it and lists the candidate as failed."""
    run = copy.deepcopy(launch_run("layernorm"))
    c2 = run["candidates"][1]
    c2["verdict"], c2["timing"], c2["speedup"] = c2["drop_in"]["verdict"], None, None
    report = from_record(run)
    assert [(f.label, f.status) for f in report.failed] == [(c2["label"], "unwritten")]
    assert "point-c2" not in groups(roofline_svg(report))
