"""Prints the README's results tables from the files in benchmarks/results/.

Usage: python benchmarks/readme_table.py [--side-by-side] [RESULTS.json ...]

Without ``--side-by-side``: ``cudalens optimize`` per example (``h200-examples-*.json``, written
by ``run_examples.py`` or ``bench_optimizer.py --record``); for each kernel the newest run (by
date) across the files, with the commit it was measured at. With it: the newest
``h200-optimizer-*.json`` of ``bench_optimizer.py``, cudalens against Kernel Tuner (block size
only) and PyTorch, in one run. Every number comes from the JSON files; nothing is typed by hand.
Files whose name says ``dirty`` were measured on a working tree with uncommitted changes and are
left out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def newest_runs(files: list[Path]) -> list[tuple[dict, dict]]:
    """(file record, run) pairs, the newest run of each kernel, in the order first seen."""
    best: dict[str, tuple[dict, dict]] = {}
    for f in files:
        rec = json.loads(f.read_text())
        if "dirty" in f.name:
            continue  # measured on a working tree that differs from its commit
        for run in rec["runs"]:
            if "error" in run:
                continue
            key = run["kernel"]
            if key not in best or best[key][0]["date"] < rec["date"]:
                best[key] = (rec, run)
    return sorted(best.values(), key=lambda rr: rr[1]["file"])


def counts(run: dict) -> tuple[int, int]:
    """(verified, distinct candidates timed or judged): over every runner evaluation where the
    run records them (a candidate timed again in the confirmation counts once, verified only if
    it passed every time), else over the reported rows."""
    if "evaluations" not in run:
        rows = run["candidates"]
        return sum(1 for c in rows if c["verdict"]["status"] == "passed"), len(rows)
    passed: dict = {}
    for ev in run["evaluations"]:
        for v in ev["variants"]:
            key = (v["source"], json.dumps(v["launches"]), tuple(v["options"]))
            ok = v["verdict"]["status"] == "passed"
            passed[key] = passed.get(key, True) and ok
    return sum(passed.values()), len(passed)


def row(rec: dict, run: dict) -> str:
    b, w = run["baseline"], run["winner"]
    n_ok, n = counts(run)
    best = w["timing"] if w else b
    rate = (f"{best['achieved_gbps']:,.0f} GB/s ({best['percent_of_copy']:.0f}%)")
    if best.get("gflops"):
        rate += f", {best['gflops']:,.0f} GFLOP/s"
    if w is None:
        change, speed, best_t = "none significant", "1.00x", f"{b['median_us']:,.1f} us"
    else:
        s = w["speedup"]
        change = w["label"]
        speed = f"**{s['value']:.2f}x** [{s['ci_low']:.2f}, {s['ci_high']:.2f}]"
        best_t = f"{w['timing']['median_us']:,.1f} us"
    return (f"| `{run['kernel']}` ({run['file']}) | {b['median_us']:,.1f} us | {best_t} | {speed} "
            f"| {change} | {rate} | {n_ok} / {n} | {rec['commit'][:7]} |")


def table(files: list[Path]) -> str:
    pairs = newest_runs(files)
    devices = {(r["device"]["name"], r["device"]["driver_version"]) for r, _ in pairs}
    lines = ["| kernel | baseline | best | speedup [95% CI] | winning change | achieved (of copy) "
             "| verified / candidates | commit |", "|---|---|---|---|---|---|---|---|"]
    lines += [row(r, run) for r, run in pairs]
    dev = "; ".join(f"{n}, driver {d}" for n, d in sorted(devices))
    copies = ", ".join(sorted({f"{r['device']['copy_bandwidth_gbps']:,.0f}" for r, _ in pairs}))
    lines += ["", f"Device: {dev}. Measured copy bandwidth: {copies} GB/s. Dates: "
              f"{', '.join(sorted({r['date'][:10] for r, _ in pairs}))}."]
    return "\n".join(lines)


def _sp(x: dict) -> str:
    s = x.get("speedup")
    if not isinstance(s, dict):
        return "n/a"
    return f"{s['value']:.2f}x [{s['ci_low']:.2f}, {s['ci_high']:.2f}]"


def versus(ours: dict, theirs: dict) -> str:
    """``ahead``, ``tie`` or ``behind``: ours against theirs by their 95% intervals of the
    speedup over the same baseline in the same evaluation (overlapping intervals: a tie)."""
    a, b = ours.get("speedup"), theirs.get("speedup")
    if not isinstance(a, dict) or not isinstance(b, dict):
        return "n/a"
    if a["ci_low"] > b["ci_high"]:
        return "ahead"
    if a["ci_high"] < b["ci_low"]:
        return "behind"
    return "tie"


def side_by_side(paths) -> str:
    """The README's table of ``bench_optimizer.py`` results: one file, or several (a Path or a
    list of them; a kernel measured in more than one keeps its run from the last file named,
    the table's order is the order first seen). The footer names each file's device, commit,
    date and settings. Raises KeyError on a file that is not a ``bench_optimizer.py`` record."""
    paths = [paths] if isinstance(paths, Path) else list(paths)
    recs = [json.loads(p.read_text()) for p in paths]
    chosen: dict[str, dict] = {}
    for rec in recs:
        for r in rec["runs"]:
            chosen[r["kernel"]] = r
    rows = list(chosen.values())
    lines = ["| kernel | baseline | cudalens [95% CI] | winning change | Kernel Tuner, block only "
             "[95% CI] | vs Kernel Tuner | PyTorch | cudalens: of copy bw / GFLOP/s |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| `{r['kernel']}` | error: {r['error'][:80]} | | | | | | |")
            continue
        kt = r["kernel_tuner"]
        block = "x".join(map(str, kt.get("block") or [])) or "fixed by the kernel"
        pt = r.get("pytorch", {})
        torch = (f"{pt['median_us']:,.1f} us ({pt['speedup']:.2f}x)" if "median_us" in pt
                 else "none listed")
        # Without a significant winner the tool offers nothing: the original is ours (files
        # before 2026-12-03 hold the best candidate there, as fast as it measured).
        kept = not r["ours"].get("significant")
        ours = {"speedup": {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0}} if kept else r["ours"]
        t = (r["baseline"] if kept else r["ours"].get("timing")) or {}
        perf = f"{t.get('percent_of_copy', 0):.0f}%"
        if t.get("gflops"):
            perf += f" / {t['gflops']:,.0f}"
        change = "none significant" if kept else r["ours"]["label"]
        cell = "1.00x (original kept)" if kept else _sp(ours)
        lines.append(f"| `{r['kernel']}` | {r['baseline']['median_us']:,.1f} us | {cell} "
                     f"| {change} | {_sp(kt)} ({block}) | {versus(ours, kt)} | {torch} "
                     f"| {perf} |")
    lines.append("")
    for path, rec in zip(paths, recs):
        dev = rec["device"]
        kernels = ", ".join(f"`{r['kernel']}`" for r in rec["runs"]
                            if chosen.get(r["kernel"]) is r)
        lines.append(f"{dev['name']}, driver {dev['driver_version']}, measured copy bandwidth "
                     f"{dev['copy_bandwidth_gbps']:,.0f} GB/s; commit {rec['commit'][:7]}, "
                     f"{rec['date'][:10]}; {rec['settings']['budget']} candidates at most, "
                     f"{rec['settings']['repetitions']} timed rounds at most. From {path.name}"
                     + (f" ({kernels})." if len(paths) > 1 else "."))
    return "\n".join(lines)


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[:1] == ["--side-by-side"]:
        files = [Path(a) for a in argv[1:]] or sorted(
            (f for f in RESULTS.glob("h200-optimizer-*.json") if "dirty" not in f.name),
            key=lambda f: json.loads(f.read_text())["date"])[-1:]
        print(side_by_side(files))
    else:
        args = [Path(a) for a in argv] or sorted(RESULTS.glob("h200-examples-*.json"))
        print(table(args))
