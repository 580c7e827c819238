"""Runs ``cudalens optimize`` on every example and writes one JSON file of results.

Usage (on a machine with an NVIDIA GPU):
    python benchmarks/run_examples.py --commit $(git rev-parse HEAD) --out benchmarks/results/h200.json

Each example is optimized in its own process, as a user would run it. The output records the
device, driver, commit and date next to each kernel's baseline time, best time, speedup,
achieved bandwidth and every candidate's verdict.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commit", required=True, help="commit of the code being measured")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--repetitions", type=int, default=50)
    ap.add_argument("examples", nargs="*", help="example files (default: examples/*.cu)")
    args = ap.parse_args()
    files = [Path(f) for f in args.examples] or sorted((ROOT / "examples").glob("*.cu"))
    runs: list[dict] = []
    result = {
        "benchmark": "cudalens optimize on examples/",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": args.commit,
        "device": None,
        "settings": {"budget": args.budget, "repetitions": args.repetitions},
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for f in files:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "r.json"
            cmd = [sys.executable, "-m", "cudalens", "optimize", str(f), "--budget",
                   str(args.budget), "--repetitions", str(args.repetitions), "--json", str(out)]
            print("$", " ".join(cmd[2:]), flush=True)
            proc = subprocess.run(cmd, cwd=ROOT, text=True, capture_output=True)
            print(proc.stdout[-6000:], proc.stderr[-3000:], sep="\n", flush=True)
            if proc.returncode != 0 or not out.exists():
                runs.append({"file": str(f.relative_to(ROOT)), "error": proc.stderr.strip()[-2000:],
                             "exit_code": proc.returncode})
                args.out.write_text(json.dumps(result, indent=2) + "\n")
                continue
            rec = json.loads(out.read_text())
        device = rec.pop("device")
        result["device"] = result["device"] or device
        # Each optimize process measures the copy bandwidth its percentages are relative to.
        rec["copy_bandwidth_gbps"] = device["copy_bandwidth_gbps"]
        rec["file"] = str(Path(rec["file"]).resolve().relative_to(ROOT))
        runs.append(rec)
        # Written after every example, so a run cut short keeps what it measured.
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(summary_table(result))
    return 0 if all("error" not in r for r in runs) else 1


def summary_table(result: dict) -> str:
    """The README's markdown table of one results file."""
    dev = result.get("device") or {}
    lines = [f"Measured on {dev.get('name', '?')} (driver {dev.get('driver_version', '?')}, copy "
             f"bandwidth {dev.get('copy_bandwidth_gbps', 0):,.0f} GB/s), commit "
             f"{result['commit'][:10]}, {result['date'][:10]}.", "",
             "| kernel | baseline | best | speedup [95% CI] | achieved | verified / candidates |",
             "|---|---|---|---|---|---|"]
    for r in result["runs"]:
        if "error" in r:
            lines.append(f"| {r['file']} | error | | | | |")
            continue
        b = r["baseline"]
        w = r["winner"]
        n_ok = sum(1 for c in r["candidates"] if c["verdict"]["status"] == "passed")
        n = len(r["candidates"])
        if w is None:
            lines.append(f"| {r['kernel']} ({r['file']}) | {b['median_us']:,.1f} us | no significant "
                         f"win | 1.00x | {b['achieved_gbps']:,.0f} GB/s ({b['percent_of_copy']:.0f}%) "
                         f"| {n_ok} / {n} |")
        else:
            t, s = w["timing"], w["speedup"]
            lines.append(f"| {r['kernel']} ({r['file']}) | {b['median_us']:,.1f} us | "
                         f"{t['median_us']:,.1f} us | {s['value']:.2f}x [{s['ci_low']:.2f}, "
                         f"{s['ci_high']:.2f}] | {t['achieved_gbps']:,.0f} GB/s "
                         f"({t['percent_of_copy']:.0f}%) | {n_ok} / {n} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
