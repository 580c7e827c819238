"""The runner's own numbers (issue 3, point 6): evaluation throughput, repeatability, and
Kernel Tuner timing the same kernel over the same launch configurations in the same run.

Usage (on a machine with an NVIDIA GPU, pycuda and kernel_tuner, ``pip install -e '.[gpu,bench]'``):
    python benchmarks/bench_runner.py --out benchmarks/results/h200-runner-$(date +%F).json

What it measures, for ``tests/data/runner/saxpy.cu`` (z = a * x + y, ``--n`` floats) over the
1D blocks ``--blocks`` (default 32, 64, ..., 1024 threads; grid = ceil(n / block)):

1. **Throughput.** One supervised evaluation (the service's path: a worker process, compile,
   verification on every seed and case, timing interleaved with the baseline, ``--repetitions``
   rounds) of one candidate per block; candidates per minute = candidates / wall seconds x 60.
2. **Repeatability.** The same evaluation again, in the same supervisor; per block, the ratio
   of the two evaluations' medians, and the baseline's.
3. **Kernel Tuner**, right after in this process, once our worker has stopped: ``kernel_tuner.tune_kernel`` (brute force,
   ``iterations=--repetitions``) over the same blocks and the same n; configurations per
   minute from its wall time, and per block the ratio of its time (median of its per-iteration
   ``times`` where it reports them, else its mean ``time``) to our median. Kernel Tuner checks
   no answers and does not flush L2 between launches; our runner verifies every candidate and
   flushes; both are in the record so the ratios can be read for what they are.

The JSON records the device (its ``DeviceInfo``), driver, commit, date (UTC) and arguments,
then the three sections. ``--skip-kernel-tuner`` leaves section 3 out. Exit status 2 when a
dependency is missing (the message says which), 3 when no GPU is usable.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT)]

SAXPY = ROOT / "tests" / "data" / "runner" / "saxpy.cu"
DEFAULT_BLOCKS = tuple(range(32, 1025, 32))
A = 2.5


def parse_blocks(text: str) -> tuple[int, ...]:
    """``"32,64,128"`` or a range ``"32:1024:32"`` (start:stop:step, stop included) as sorted
    unique block sizes. Raises ``ValueError`` naming the bad part: not a number, or outside
    1..1024 threads."""
    text = text.strip()
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise ValueError(f"--blocks: expected start:stop:step, found '{text}'")
        try:
            start, stop, step = (int(p) for p in parts)
        except ValueError:
            raise ValueError(f"--blocks: expected integers in start:stop:step, found '{text}'") \
                from None
        if step <= 0:
            raise ValueError(f"--blocks: step must be positive, found {step}")
        values = list(range(start, stop + 1, step))
    else:
        values = []
        for part in text.split(","):
            try:
                values.append(int(part))
            except ValueError:
                raise ValueError(f"--blocks: '{part.strip()}' is not a number of threads") from None
    bad = [v for v in values if not 1 <= v <= 1024]
    if bad or not values:
        raise ValueError(f"--blocks: block sizes must lie in 1..1024 threads, found "
                         f"{bad or 'none'}")
    return tuple(sorted(set(values)))


def _blocks_arg(text: str) -> tuple[int, ...]:
    try:
        return parse_blocks(text)
    except ValueError as e:  # argparse shows ArgumentTypeError's message, not ValueError's
        raise argparse.ArgumentTypeError(str(e).removeprefix("--blocks: ")) from e


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path, help="JSON file to write")
    ap.add_argument("--n", type=int, default=1 << 22, help="saxpy length (floats)")
    ap.add_argument("--blocks", type=_blocks_arg, default=DEFAULT_BLOCKS,
                    help="block sizes: 32,64,128 or start:stop:step (default 32:1024:32)")
    ap.add_argument("--repetitions", type=int, default=50,
                    help="timed launches per configuration, ours and Kernel Tuner's")
    ap.add_argument("--commit", default="", help="commit measured (default: git rev-parse HEAD)")
    ap.add_argument("--skip-kernel-tuner", action="store_true")
    args = ap.parse_args(argv)
    if args.n < 1:
        ap.error(f"--n must be at least 1, found {args.n}")
    if args.repetitions < 5:
        ap.error(f"--repetitions must be at least 5, found {args.repetitions}")
    if args.out.exists() and args.out.is_dir():
        ap.error(f"--out must be a file, found the directory {args.out}")
    return args


def git_commit(root: Path = ROOT) -> str:
    """``git rev-parse HEAD`` of ``root``, or ``"unknown"`` when git or the repository is
    missing."""
    try:
        proc = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else "unknown"


def per_minute(count: int, seconds: float) -> float:
    """``count`` items in ``seconds`` as items per minute. Raises ``ValueError`` for a
    non-positive duration."""
    if seconds <= 0:
        raise ValueError(f"expected a positive duration, found {seconds} s")
    return count / seconds * 60.0


def ratios(numerator: dict[int, float], denominator: dict[int, float]) -> dict[str, Any]:
    """Per key present in both with positive values: numerator / denominator, and a summary
    (count, median, min, max, median |ratio - 1|). Keys become strings (JSON)."""
    keys = sorted(k for k in numerator if k in denominator
                  and numerator[k] > 0 and denominator[k] > 0)
    per = {k: numerator[k] / denominator[k] for k in keys}
    if not per:
        return {"per_key": {}, "count": 0}
    values = list(per.values())
    return {"per_key": {str(k): v for k, v in per.items()}, "count": len(values),
            "median": statistics.median(values), "min": min(values), "max": max(values),
            "median_abs_deviation_from_1": statistics.median(abs(v - 1) for v in values)}


def kernel_tuner_time_us(result: dict) -> float | None:
    """One Kernel Tuner result's time in microseconds: the median of its ``times`` (ms) where
    present, else its ``time`` (ms, the mean); None for a failed configuration."""
    times = result.get("times")
    if isinstance(times, list) and times and all(isinstance(t, (int, float)) for t in times):
        return statistics.median(times) * 1e3
    t = result.get("time")
    return t * 1e3 if isinstance(t, (int, float)) else None


def write_report(path: Path, report: dict) -> None:
    """Write ``report`` as indented JSON to ``path`` (parents made), through a temporary file
    in the same folder renamed into place, so a reader never sees half a report."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)


def header(args: argparse.Namespace, device: dict) -> dict:
    """The report's identifying fields: device facts, driver, commit, date, arguments."""
    return {"benchmark": "bench_runner", "device": device,
            "driver": device.get("driver_version", ""),
            "commit": args.commit or git_commit(),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "args": {"n": args.n, "blocks": list(args.blocks), "repetitions": args.repetitions,
                     "kernel_tuner": not args.skip_kernel_tuner}}


# ---------------------------------------------------------------- GPU parts


def _problem(n: int):
    from gpu_runner.problem import Buffer, Case, Problem, Scalar

    def case(label, size):
        return Case(label, (Scalar("n", "int32", size), Scalar("a", "float32", A),
                            Buffer("x", "float32", size, "in"),
                            Buffer("y", "float32", size, "in"),
                            Buffer("z", "float32", size, "out")),
                    bytes_moved=12 * size, flops=2 * size)
    ragged = max(1, n - n // 3 - 1) | 1  # odd: no multiple of any block size above 1
    return Problem("saxpy", (case("nominal", n), case("ragged", ragged)), seeds=(1, 2))


def _variant(label: str, block: int, problem):
    from gpu_runner.problem import Launch, Variant
    return Variant(label=label, source=SAXPY.read_text(), name="saxpy",
                   launches=tuple(Launch(grid=(-(-c.args[0].value // block), 1, 1),
                                         block=(block, 1, 1)) for c in problem.cases))


def ours(args, sup) -> tuple[dict, dict]:
    """Two identical supervised evaluations; (throughput section, repeatability section)."""
    from gpu_runner.workers.protocol import EvaluateSpec

    problem = _problem(args.n)
    base = _variant("baseline", 256, problem)
    cands = tuple(_variant(f"block{b}", b, problem) for b in args.blocks)
    spec = EvaluateSpec(problem, base, cands, repetitions=args.repetitions, warmup=3)
    runs = []
    for _ in range(2):
        started = time.monotonic()
        ev = sup.evaluate(spec)
        seconds = time.monotonic() - started
        if ev.error or ev.baseline is None:
            raise RuntimeError(f"the evaluation failed: {ev.error or 'no baseline timing'}")
        medians = {b: c.timing.median_us for b, c in zip(args.blocks, ev.candidates)
                   if c.verdict.ok and c.timing is not None}
        failed = {c.verdict.variant: c.verdict.reason for c in ev.candidates if not c.verdict.ok}
        runs.append({"seconds": seconds, "baseline_median_us": ev.baseline.median_us,
                     "medians_us": medians, "failed": failed,
                     "ci_half_width_pct": {b: c.timing.ci_half_width_pct
                                           for b, c in zip(args.blocks, ev.candidates)
                                           if c.timing is not None}})
    first, second = runs
    throughput = {"candidates": len(cands), "seconds": first["seconds"],
                  "candidates_per_minute": per_minute(len(cands), first["seconds"]),
                  "second_run_candidates_per_minute": per_minute(len(cands), second["seconds"]),
                  "failed": first["failed"],
                  "medians_us": {str(b): m for b, m in first["medians_us"].items()},
                  "ci_half_width_pct": {str(b): v for b, v in first["ci_half_width_pct"].items()}}
    repeat = {"baseline_ratio": second["baseline_median_us"] / first["baseline_median_us"],
              "candidates": ratios(second["medians_us"], first["medians_us"])}
    return throughput, {**repeat, "_first_medians": first["medians_us"]}


def kernel_tuner_section(args, our_medians: dict[int, float], seconds_ours: float) -> dict:
    import numpy as np
    try:
        import kernel_tuner as kt
    except ImportError as e:
        raise MissingDependency(f"kernel_tuner is not installed ({e}); pip install "
                                f"'cudalens[bench]' or pass --skip-kernel-tuner") from e
    n = args.n
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    z = np.zeros(n, dtype=np.float32)
    started = time.monotonic()
    results, _env = kt.tune_kernel("saxpy", SAXPY.read_text(), n,
                                   [np.int32(n), np.float32(A), x, y, z],
                                   {"block_size_x": list(args.blocks)}, lang="CUDA",
                                   iterations=args.repetitions, quiet=True, verbose=False)
    seconds = time.monotonic() - started
    theirs = {}
    for r in results:
        t = kernel_tuner_time_us(r)
        if t is not None:
            theirs[int(r["block_size_x"])] = t
    ours_rate = per_minute(len(args.blocks), seconds_ours)
    kt_rate = per_minute(len(results), seconds)
    return {"version": getattr(kt, "__version__", "unknown"), "seconds": seconds,
            "configurations": len(results), "measured": len(theirs),
            "configurations_per_minute": kt_rate,
            "throughput_ratio_ours_over_kernel_tuner": ours_rate / kt_rate,
            "times_us": {str(b): t for b, t in sorted(theirs.items())},
            "time_ratio_kernel_tuner_over_ours": ratios(theirs, our_medians),
            "notes": "Kernel Tuner: no answer check, no L2 flush, mean or median of its "
                     "iterations; ours: verified on 2 seeds x 2 sizes, L2 flushed before every "
                     "launch, interleaved with the baseline, median"}


class MissingDependency(RuntimeError):
    """A package the benchmark needs is not installed; the message says how to get it."""


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        from gpu_runner.workers.backend import WorkerConfig
        from gpu_runner.workers.supervisor import Supervisor, WorkerUnavailable
    except ImportError as e:
        print(f"bench_runner: {e}", file=sys.stderr)
        return 2
    sup = Supervisor(WorkerConfig())
    try:
        try:
            sup.start()
        except WorkerUnavailable as e:
            print(f"bench_runner: no GPU: {e}", file=sys.stderr)
            return 3
        report = header(args, dataclasses.asdict(sup.info))
        throughput, repeat = ours(args, sup)
        first_medians = repeat.pop("_first_medians")
        report["throughput"] = throughput
        report["repeatability"] = repeat
        write_report(args.out, report)
        sup.close()  # Kernel Tuner gets the GPU to itself
        if not args.skip_kernel_tuner:
            try:
                report["kernel_tuner"] = kernel_tuner_section(args, first_medians,
                                                              throughput["seconds"])
            except MissingDependency as e:
                print(f"bench_runner: {e}", file=sys.stderr)
                return 2
            write_report(args.out, report)
    finally:
        sup.close()
    print(json.dumps({k: report[k] for k in ("device", "commit", "date")}, indent=1))
    print(f"throughput: {throughput['candidates_per_minute']:.1f} candidates/min; "
          f"repeatability: baseline ratio {repeat['baseline_ratio']:.4f}, candidates median "
          f"|ratio - 1| {repeat['candidates'].get('median_abs_deviation_from_1', float('nan')):.4f}")
    if "kernel_tuner" in report:
        k = report["kernel_tuner"]
        agree = k["time_ratio_kernel_tuner_over_ours"]
        print(f"kernel tuner: {k['configurations_per_minute']:.1f} configurations/min; ours / "
              f"theirs throughput {k['throughput_ratio_ours_over_kernel_tuner']:.2f}; their time "
              f"/ ours: median {agree.get('median', float('nan')):.3f} [{agree.get('min', 0):.3f}, "
              f"{agree.get('max', 0):.3f}]")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
