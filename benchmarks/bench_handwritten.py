"""The hand-written versions against the built-in rewrites, verified and timed by the runner.

For every ``benchmarks/handwritten/EXAMPLE.PASS.cu`` whose pass applies to
``examples/EXAMPLE.cu`` (or only the files named on the command line), one runner evaluation
verifies and times, interleaved with the original: the pass's default rewrite and the
hand-written kernel, both under the rewrite's launch (a hand-written file is written for the
launch its pass chooses at its default parameters; one written for another launch fails
verification here, and the line says so). Prints one line per file and writes JSON with the device, commit
and date, per file both speedups with their 95% intervals and ``rewrite_vs_hand`` (the
rewrite's speedup over the hand-written one's: the issue's goal is at least 0.8).

Usage (on a machine with an NVIDIA GPU and pycuda):
    python benchmarks/bench_handwritten.py --commit $(git rev-parse HEAD) \\
        --out benchmarks/results/h200-handwritten-$(date +%F).json [histogram.hist_privatize ...]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT)]

from cudalens.optimizer import passes  # noqa: E402
from cudalens.optimizer.context import make_context  # noqa: E402
from cudalens.spec.resolve import build_problem, build_variant  # noqa: E402
from cudalens.target import load_target  # noqa: E402

HANDWRITTEN = ROOT / "benchmarks" / "handwritten"


def pairs(names: list[str]) -> list[tuple[Path, str]]:
    """(example path, pass name) for each hand-written file (all, or the ``names`` given as
    ``EXAMPLE.PASS``). Raises SystemExit naming a file that does not exist."""
    files = [HANDWRITTEN / f"{n}.cu" for n in names] if names else \
        sorted(HANDWRITTEN.glob("*.cu"))
    out = []
    for f in files:
        if not f.is_file():
            raise SystemExit(f"no hand-written file {f}")
        example, pass_name = f.stem.split(".", 1)
        out.append((_example_for(example, pass_name), pass_name))
    return out


def _example_for(example: str, pass_name: str) -> Path:
    """``examples/EXAMPLE.cu``, else the variant corpus's ``PASS/EXAMPLE.cu`` (a hand-written
    version of a variant). Raises SystemExit naming both places when neither exists."""
    for place in (ROOT / "examples" / f"{example}.cu",
                  ROOT / "tests" / "data" / "variants" / pass_name / f"{example}.cu"):
        if place.is_file():
            return place
    raise SystemExit(f"no kernel for the hand-written {example}.{pass_name}.cu: expected "
                     f"examples/{example}.cu or tests/data/variants/{pass_name}/{example}.cu")


def measure(runner, example: Path, pass_name: str) -> Optional[dict]:
    """One evaluation of the original, the rewrite and the hand-written version; None when
    the pass does not apply to the example."""
    t = load_target(example)
    ctx = make_context(t.text, str(t.path), t.kernel.qualified_name, t.spec)
    p = passes.get(pass_name)
    if p.check(ctx) is not None:
        return None
    rewrite = p.apply(ctx, **p.parameter_space(ctx)[0])
    hand_text = (HANDWRITTEN / f"{example.stem}.{pass_name}.cu").read_text(encoding="utf-8")
    sm = runner.device_info().sm_count
    kernel = ctx.kernel.qualified_name
    problem = build_problem(ctx.spec, ctx.kernel)
    baseline = build_variant("baseline", ctx.text, kernel, ctx.spec, ctx.spec.launch, sm)
    cands = [build_variant("rewrite", rewrite.source, kernel, ctx.spec, rewrite.launch, sm,
                           options=rewrite.options),
             build_variant("hand", hand_text, kernel, ctx.spec, rewrite.launch, sm)]
    ev = runner.evaluate(problem, baseline, cands, repetitions=30, warmup=3, time_budget_s=20.0)
    row: dict = {"example": example.stem, "pass": pass_name, "error": ev.error,
                 "launch": {"block": list(rewrite.launch.block),
                            "grid": list(rewrite.launch.grid)}}
    for label, r in zip(("rewrite", "hand"), ev.candidates):
        row[label] = {"ok": r.verdict.ok, "status": r.verdict.status, "reason": r.verdict.reason,
                      "speedup": r.speedup.value if r.speedup else None,
                      "ci": [r.speedup.ci_low, r.speedup.ci_high] if r.speedup else None}
    a, b = row["rewrite"]["speedup"], row["hand"]["speedup"]
    row["rewrite_vs_hand"] = a / b if a and b else None
    return row


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commit", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("names", nargs="*", help="EXAMPLE.PASS (default: every hand-written file)")
    args = ap.parse_args(argv)
    from gpu_runner.runner import Runner

    runner = Runner()
    info = runner.device_info()
    record = {"device": info.name, "driver": info.driver_version,
              "commit": args.commit, "date": dt.date.today().isoformat(), "runs": []}
    try:
        for example, pass_name in pairs(args.names):
            row = measure(runner, example, pass_name)
            if row is None:
                print(f"{example.stem}.{pass_name}: the pass does not apply, skipped")
                continue
            record["runs"].append(row)
            fmt = lambda r: (f"{r['speedup']:.2f}x" if r["speedup"] else r["status"])
            ratio = row["rewrite_vs_hand"]
            print(f"{example.stem:12s} {pass_name:22s} rewrite {fmt(row['rewrite']):>8s}  "
                  f"hand {fmt(row['hand']):>8s}  rewrite/hand "
                  f"{ratio:.2f}" if ratio else f"{example.stem} {pass_name}: {row}")
            args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    finally:
        runner.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
