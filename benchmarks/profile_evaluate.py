"""Where an evaluation's time goes: one runner evaluation of an example's first search batch,
in this process, with a timestamp on every progress message and a cProfile of the whole call.

Usage (on a machine with an NVIDIA GPU and pycuda):
    python benchmarks/profile_evaluate.py examples/saxpy.cu --batch 8 --out prof/saxpy

Writes ``OUT.log`` (progress messages with seconds since the start) and ``OUT.txt`` (the 40
functions with the most cumulative time). A diagnostic, not a benchmark: nothing is compared.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT)]


def main() -> int:
    from cudalens.optimizer.context import make_context
    from cudalens.optimizer.staged_search import ordered
    from cudalens.spec.resolve import build_problem, build_variant
    from cudalens.target import load_target
    from gpu_runner.runner import Runner

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repetitions", type=int, default=30)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    target = load_target(args.file)
    runner = Runner(0)
    device = runner.device_info()
    name = target.kernel.qualified_name
    problem = build_problem(target.spec, target.kernel)
    baseline = build_variant("baseline", target.text, name, target.spec, target.spec.launch,
                             device.sm_count)
    ctx = make_context(target.text, str(target.path), target.kernel.name, target.spec)
    variants = []
    for cand in ordered(ctx, 0):
        if len(variants) == args.batch:
            break
        try:
            variants.append(build_variant(f"c{len(variants) + 1}", cand.source, name, target.spec,
                                          cand.launch, device.sm_count, options=cand.options))
        except Exception:  # noqa: BLE001 (a launch that cannot run this problem: skip it)
            continue
    start = time.perf_counter()
    lines: list[str] = []

    def progress(event) -> None:  # a gpu_runner.events event
        lines.append(f"{time.perf_counter() - start:8.2f} s  {event.text()}")

    prof = cProfile.Profile()
    prof.enable()
    evaluation = runner.evaluate(problem, baseline, variants, repetitions=args.repetitions,
                                 on_event=progress)
    prof.disable()
    total = time.perf_counter() - start
    lines.append(f"{total:8.2f} s  done: {len(variants)} candidates, "
                 f"{sum(c.verdict.ok for c in evaluation.candidates)} verified")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".log").write_text("\n".join(lines) + "\n")
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(40)
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(25)
    args.out.with_suffix(".txt").write_text(buf.getvalue())
    print(lines[-1])
    runner.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
