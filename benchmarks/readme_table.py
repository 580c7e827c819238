"""Prints the README's results table from the files in benchmarks/results/.

Usage: python benchmarks/readme_table.py [RESULTS.json ...]

For each kernel the newest run (by date) across the files is shown, with the commit it was
measured at. Every number comes from the JSON files; nothing is typed by hand. Files whose name
says ``dirty`` were measured on a working tree with uncommitted changes and are left out.
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


def row(rec: dict, run: dict) -> str:
    b, w = run["baseline"], run["winner"]
    n_ok = sum(1 for c in run["candidates"] if c["verdict"]["status"] == "passed")
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
            f"| {change} | {rate} | {n_ok} / {len(run['candidates'])} | {rec['commit'][:7]} |")


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


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:]] or sorted(RESULTS.glob("*.json"))
    print(table(args))
