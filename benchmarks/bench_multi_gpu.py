"""Several GPUs (issue 16, point 4): verified candidates per minute on one GPU and split over
every GPU the runner serves, same kernel, same candidates, side by side in one run; and the same
candidates' speedups measured on each GPU.

Usage (a GPU machine with pycuda, ``pip install -e '.[gpu]'``):
    python benchmarks/bench_multi_gpu.py --out $R/multi-gpu-$(date +%F).json

Kernel: ``tests/data/runner/saxpy.cu`` (z = a * x + y, ``--n`` floats), baseline 256 threads per
block, one candidate per block size of ``--blocks``. It runs the runner's GPU pool in this
process (``gpu_runner.workers.pool.GpuPool``: one supervised worker process per GPU, the CPU
compile pool, as ``cudalens runner`` does) and submits service jobs to it:

1. **Warm-up.** One small evaluation on each GPU (worker start, module loads), not counted.
2. **Throughput**, ``--rounds`` times, alternating: the candidates on GPU 0 alone, then split
   over every GPU (``EvaluateRequest.devices``; ``gpu_runner.workers.split``). Verified per
   minute = candidates that passed verification and were timed / wall seconds x 60, from
   submitting the job to its result. The ratio all / one is the scaling (goal: >= 1.8 on two).
3. **Agreement.** The ``--agree`` candidates (default block 128 and 1024) evaluated on each GPU
   alone, one after the other; per candidate the speedup on every GPU and max |s_k / s_0 - 1|
   (goal: within 2%).

On one GPU the "all" column is the same GPU (reported as one column, no ratio) and agreement
has one entry. The JSON records every GPU's ``DeviceInfo``, the commit, the date (UTC) and the
arguments. Exit status 2 for a missing dependency, 3 when no GPU is usable, 4 when an
evaluation fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT), str(ROOT / "benchmarks")]

from bench_runner import _problem, _variant, git_commit, parse_blocks, per_minute, \
    write_report  # noqa: E402


class EvaluationFailed(RuntimeError):
    """A job ended otherwise than ``done``, or its evaluation has an error."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="JSON file to write")
    ap.add_argument("--n", type=int, default=1 << 22, help="saxpy length (floats)")
    ap.add_argument("--blocks", type=parse_blocks, default=parse_blocks("32:1024:32"),
                    help="candidate block sizes (32,64 or start:stop:step)")
    ap.add_argument("--agree", type=parse_blocks, default=parse_blocks("128,1024"),
                    help="block sizes whose speedup is measured on each GPU")
    ap.add_argument("--repetitions", type=int, default=50, help="timed rounds at most")
    ap.add_argument("--rounds", type=int, default=2, help="one-GPU / all-GPU alternations")
    ap.add_argument("--commit", default="", help="commit measured (default: git rev-parse HEAD)")
    ap.add_argument("--backend", default="", help=argparse.SUPPRESS)  # MODULE:NAME, for tests
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.repetitions < 5:
        ap.error("--rounds must be >= 1 and --repetitions >= 5")
    return args


def run_job(pool, spec, device=None, devices=None, timeout_s: float = 3600.0):
    """Submit one evaluation job and wait for it: (Evaluation, wall seconds). Raises
    ``EvaluationFailed``."""
    from gpu_runner.service.jobs import Job

    job = Job(spec, device, devices=tuple(devices) if devices else None)
    started = time.monotonic()
    pool.submit(job)
    if not job.wait(timeout_s):
        job.request_cancel()
        raise EvaluationFailed(f"the evaluation did not finish within {timeout_s:g} s")
    seconds = time.monotonic() - started
    if job.state != "done":
        raise EvaluationFailed(f"the evaluation ended {job.state}: {job.error}")
    if job.result.error or job.result.baseline is None:
        raise EvaluationFailed(f"the evaluation failed: {job.result.error or 'no baseline'}")
    return job.result, seconds


def verified(ev) -> int:
    return sum(1 for c in ev.candidates if c.verdict.ok and c.timing is not None)


def throughput(pool, args, gpus: list[int]) -> dict:
    from gpu_runner.workers.protocol import EvaluateSpec

    problem = _problem(args.n)
    spec = EvaluateSpec(problem, _variant("baseline", 256, problem),
                        tuple(_variant(f"block{b}", b, problem) for b in args.blocks),
                        repetitions=args.repetitions, warmup=3)
    columns = {"one_gpu": [], "all_gpus": []} if len(gpus) > 1 else {"one_gpu": []}
    for _ in range(args.rounds):
        for name in columns:
            ev, seconds = run_job(pool, spec, device=gpus[0],
                                  devices=gpus if name == "all_gpus" else None)
            per_gpu = {str(g.index): sum(1 for c in ev.candidates if c.device == g.index)
                       for g in (ev.gpus or ())}
            columns[name].append({"seconds": seconds, "verified": verified(ev),
                                  "verified_per_minute": per_minute(verified(ev), seconds),
                                  "candidates_per_gpu": per_gpu})
    out = {"candidates": len(spec.candidates), "gpus": gpus}
    for name, runs in columns.items():
        out[name] = {"runs": runs, "median_verified_per_minute":
                     statistics.median(r["verified_per_minute"] for r in runs)}
    if "all_gpus" in out:
        out["scaling_all_over_one"] = (out["all_gpus"]["median_verified_per_minute"] /
                                       out["one_gpu"]["median_verified_per_minute"])
    return out


def agreement(pool, args, gpus: list[int]) -> dict:
    from gpu_runner.workers.protocol import EvaluateSpec

    problem = _problem(args.n)
    spec = EvaluateSpec(problem, _variant("baseline", 256, problem),
                        tuple(_variant(f"block{b}", b, problem) for b in args.agree),
                        repetitions=args.repetitions, warmup=3)
    speedups: dict[str, dict[str, float]] = {}
    for g in gpus:
        ev, _ = run_job(pool, spec, device=g)
        for c in ev.candidates:
            if c.speedup is not None:
                speedups.setdefault(c.verdict.variant, {})[str(g)] = c.speedup.value
    out = {}
    for label, per in speedups.items():
        first = per.get(str(gpus[0]))
        spread = max(abs(v / first - 1) for v in per.values()) if first else None
        out[label] = {"speedup_per_gpu": per, "max_abs_deviation_from_gpu0": spread}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        from gpu_runner.workers.pool import GpuPool, PoolConfig
    except ImportError as e:
        print(f"bench_multi_gpu: {e}", file=sys.stderr)
        return 2
    factory = None
    if args.backend:  # a worker backend factory such as service_fakes:TwoFakeGpus (tests)
        import importlib
        module, _, name = args.backend.partition(":")
        factory = getattr(importlib.import_module(module), name)()
    pool = GpuPool(PoolConfig(factory=factory, precompile_threads=0 if factory else None))
    pool.start()
    try:
        status = pool.wait_ready(300)
        if status != "ready":
            print(f"bench_multi_gpu: no GPU ({status}): {pool.message}", file=sys.stderr)
            return 3
        gpus = sorted(pool.slots)
        report = {"benchmark": "bench_multi_gpu",
                  "devices": {str(i): dataclasses.asdict(pool.slots[i].supervisor.info)
                              for i in gpus},
                  "commit": args.commit or git_commit(),
                  "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                  "args": {"n": args.n, "blocks": list(args.blocks), "agree": list(args.agree),
                           "repetitions": args.repetitions, "rounds": args.rounds}}
        try:
            from gpu_runner.workers.protocol import EvaluateSpec
            small = _problem(1 << 16)
            warm = EvaluateSpec(small, _variant("baseline", 256, small),
                                (_variant("block128", 128, small),), repetitions=5, warmup=1)
            for g in gpus:
                run_job(pool, warm, device=g)
            report["throughput"] = throughput(pool, args, gpus)
            write_report(args.out, report)
            report["agreement"] = agreement(pool, args, gpus)
        except EvaluationFailed as e:
            print(f"bench_multi_gpu: {e}", file=sys.stderr)
            write_report(args.out, report)
            return 4
        write_report(args.out, report)
    finally:
        pool.close()
    t = report["throughput"]
    line = f"one GPU: {t['one_gpu']['median_verified_per_minute']:.1f} verified/min"
    if "all_gpus" in t:
        line += (f"; {len(gpus)} GPUs: {t['all_gpus']['median_verified_per_minute']:.1f} "
                 f"verified/min (x{t['scaling_all_over_one']:.2f})")
    print(line)
    for label, a in report["agreement"].items():
        per = ", ".join(f"GPU {g}: {s:.3f}" for g, s in a["speedup_per_gpu"].items())
        dev = a["max_abs_deviation_from_gpu0"]
        print(f"{label}: {per}" + (f" (max deviation {dev * 100:.2f}%)" if dev is not None
                                   else ""))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
