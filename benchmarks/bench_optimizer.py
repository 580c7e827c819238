"""Side by side, per example: the naive kernel, cudalens's result (its winner, else the
original kept), the best block size Kernel Tuner finds for the naive kernel, and the PyTorch
operator a user would call instead.

Usage (on a machine with an NVIDIA GPU, pycuda, kernel_tuner and torch):
    python benchmarks/bench_optimizer.py --commit $(git rev-parse HEAD) \\
        --out benchmarks/results/h200-optimizer-$(date +%F).json [examples/transpose.cu ...]

Per example:

1. ``cudalens.optimize.optimize`` (the built-in search, ``--budget`` candidates) picks our
   best: its winner (``OptimizeResult.winner``: verified and significantly faster, what
   ``cudalens optimize`` offers), else the baseline itself ("original kept": the tool offers
   nothing). Without a winner the fastest verified candidate is still timed in step 3 and
   recorded apart, as ``best_candidate``, never as ours.
2. Kernel Tuner (``kernel_tuner.tune_kernel``, brute force) tunes only the block size of the
   naive kernel: every 1D block of 32..1024 threads in steps of 32, or every 2D block with
   power-of-two sides from 32 to 1024 threads, with the spec's grid expressed as Kernel
   Tuner's ``problem_size`` / ``grid_div``. Where the spec fixes the block (the output depends
   on it, as for the block reductions) there is nothing to tune and the spec's block stands.
3. The baseline, our best and Kernel Tuner's block are then verified and timed in ONE runner
   evaluation (CUDA events, warm-up, L2 flushed before every launch, the three interleaved
   launch by launch), so their ratios come from the same run.
4. The PyTorch operator (cuBLAS / cuDNN behind it where it applies) is timed right after, in
   this process, the same way: warm-up, a write of twice the L2 size before every launch,
   CUDA events around each launch, median of ``--repetitions``. Its ratio is to the runner's
   baseline median; the two are separate processes on the same GPU, one after the other.

The JSON output records the device, commit and date, and per kernel the four medians, the
speedups, achieved bandwidth as a share of the runner's measured copy bandwidth (GFLOP/s for
kernels with a ``flops`` line), Kernel Tuner's chosen block with its own reported time, and
the issue's goals (at least Kernel Tuner's result, 85% and 90% of copy bandwidth for
elementwise kernels, 2x for the transpose and the reductions, half of cuBLAS fp32's speed for
the SGEMM: PyTorch's matmul with TF32 turned off). Results are written after every example.

kernel_tuner and torch are imported only when needed; when one is missing the script says
which and how to install it, and exits with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import importlib
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT)]

ELEMENTWISE = {"saxpy", "relu_bias"}
# Kernel Tuner's PyCUDA backend compiles with nvcc, as the runner does. Its default CUDA backend
# on the H200 machine is NVRTC (cuda-python), which rejects what nvcc accepts in a .cu file: a
# host launcher function next to the kernel, INFINITY from math.h (seen 2026-11-30).
KT_BACKEND = "PYCUDA"
TWO_X = {"transpose_naive", "block_sum", "block_max"}
SGEMM = {"matmul_naive"}


class MissingDependency(RuntimeError):
    """A package the benchmark needs is not installed; the message says how to get it."""


def need(module: str, pip_name: str, what: str):
    """``importlib.import_module(module)``, or ``MissingDependency`` naming the pip package."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(f"bench_optimizer needs {pip_name} for {what}, but importing "
                                f"{module} failed ({exc}); install it with "
                                f"'pip install {pip_name}'") from None


# ---------------------------------------------------------------- Kernel Tuner: block only

def block_space(dims: int) -> list[tuple[int, ...]]:
    """The blocks Kernel Tuner tries: 1D multiples of 32 up to 1024 threads; 2D power-of-two
    sides (x at least 8) with 32 to 1024 threads."""
    if dims == 1:
        return [(b,) for b in range(32, 1025, 32)]
    sides = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    return [(x, y) for x in sides if x >= 8 for y in sides if 32 <= x * y <= 1024]


def kt_problem(spec, sizes: dict, sm_count: int) -> tuple[Optional[tuple[int, ...]], str]:
    """Kernel Tuner's ``problem_size`` for the spec's grid: ``E`` per dimension where the grid
    is ``ceil_div(E, block.<d>)`` for every block tried; (None, reason) otherwise (a block the
    spec fixes, a grid capped by ``sm_count``, a grid that is not a ceil-division)."""
    from cudalens.spec import expr as spec_expr

    launch = spec.launch
    dims = max(i + 1 for i, b in enumerate(launch.block) if b.strip() != "1")
    if any(spec_expr.BLOCK not in spec_expr.names_in(g) for g in launch.grid[:dims]):
        return None, (f"the spec's grid ({', '.join(launch.grid)}) does not follow the block: the "
                      f"block size is fixed by what the kernel computes")
    sizes_env = dict(sizes)
    problem = []
    for d, g in enumerate(launch.grid[:dims]):
        one = spec_expr.Dim3(*[1, 1, 1])
        extent = spec_expr.evaluate(g, {**sizes_env, "block": one, "sm_count": sm_count})
        for block in block_space(dims):
            b3 = spec_expr.Dim3(*(tuple(block) + (1,) * (3 - len(block))))
            got = spec_expr.evaluate(g, {**sizes_env, "block": b3, "sm_count": sm_count})
            if got != -(-extent // block[d]):
                return None, (f"grid.{'xyz'[d]} = {g} is not ceil_div(E, block.{'xyz'[d]}) for "
                              f"block {block}: Kernel Tuner cannot express it")
        problem.append(int(extent))
    return tuple(problem), ""


def kernel_tuner_best(target, case, dims: int, problem_size: tuple[int, ...],
                      iterations: int) -> dict:
    """Runs Kernel Tuner on the naive kernel over ``block_space(dims)``; returns the best
    block and Kernel Tuner's own time for it (ms, its own measurement)."""
    np = need("numpy", "numpy", "Kernel Tuner's arguments")
    kt = need("kernel_tuner", "kernel_tuner", "tuning the block size with Kernel Tuner")
    from gpu_runner.inputs import make_inputs

    inputs = make_inputs(case, seed=1)
    args = []
    for a in case.args:
        if a.kind == "buffer":
            args.append(inputs[a.name] if a.name in inputs else np.zeros(a.length, a.dtype))
        else:
            args.append(np.dtype(a.dtype).type(a.value))
    blocks = block_space(dims)
    tune_params = {"block_size_x": sorted({b[0] for b in blocks})}
    restrictions = None
    if dims == 2:
        tune_params["block_size_y"] = sorted({b[1] for b in blocks})
        restrictions = ["32 <= block_size_x * block_size_y <= 1024"]
    results, _env = kt.tune_kernel(target.kernel.name, target.text, problem_size, args,
                                   tune_params, restrictions=restrictions, lang=KT_BACKEND,
                                   iterations=iterations, quiet=True, verbose=False)
    timed = [r for r in results if isinstance(r.get("time"), (int, float))]
    if not timed:
        raise RuntimeError(f"Kernel Tuner measured no configuration of {target.kernel.name}")
    best = min(timed, key=lambda r: r["time"])
    block = (best["block_size_x"],) + ((best["block_size_y"],) if dims == 2 else ())
    return {"block": list(block), "kernel_tuner_ms": best["time"], "configurations": len(timed),
            "backend": KT_BACKEND}


# ---------------------------------------------------------------- PyTorch equivalents

def torch_ops() -> dict[str, Callable[[Any, dict, dict], Callable[[], Any]]]:
    """Kernel name -> builder of the PyTorch operator a user would call for the same
    computation: ``build(torch, tensors, scalars) -> op`` where ``op()`` launches it."""

    def saxpy(t, b, s):
        out = t.empty_like(b["y"])
        return lambda: t.add(b["y"], b["x"], alpha=s["a"], out=out)

    def transpose(t, b, s):
        x = b["in"].view(s["rows"], s["cols"])
        out = t.empty((s["cols"], s["rows"]), dtype=x.dtype, device=x.device)
        return lambda: out.copy_(x.t())

    def matmul(t, b, s):
        A = b["A"].view(s["m"], s["k"])
        B = b["B"].view(s["k"], s["n"])
        C = t.empty((s["m"], s["n"]), dtype=A.dtype, device=A.device)
        return lambda: t.mm(A, B, out=C)

    def block_sum(t, b, s):
        x = b["in"][: s["n"] // 256 * 256].view(-1, 256)
        return lambda: t.sum(x, dim=1)

    def block_max(t, b, s):
        x = b["in"][: s["n"] // 512 * 512].view(-1, 512)
        return lambda: t.amax(x, dim=1)

    def softmax(t, b, s):
        x = b["x"].view(s["rows"], s["cols"])
        return lambda: t.softmax(x, dim=1)

    def stencil(t, b, s):
        w = t.tensor([0.05, 0.1, 0.2, 0.3, 0.2, 0.1, 0.05], device=b["in"].device).view(1, 1, 7)
        x = b["in"].view(1, 1, -1)
        return lambda: t.nn.functional.conv1d(x, w, padding=3)

    def gather(t, b, s):
        idx = b["idx"].long()
        return lambda: t.index_select(b["src"], 0, idx).mul_(s["scale"])

    def relu_bias(t, b, s):
        x = b["x"].view(s["rows"], s["cols"])
        return lambda: t.relu(x + b["bias"])

    def histogram(t, b, s):
        return lambda: t.bincount(b["values"], minlength=256)

    def colsum(t, b, s):
        a = b["a"].view(s["rows"], s["cols"])
        return lambda: t.sum(a, dim=0)

    def conv2d(t, b, s):
        x = b["in"].view(1, 1, s["rows"], s["cols"])
        w = b["w"].view(1, 1, 3, 3)
        return lambda: t.nn.functional.conv2d(x, w, padding=1)

    def gemv(t, b, s):
        A = b["A"].view(s["rows"], s["cols"])
        y = t.empty(s["rows"], dtype=A.dtype, device=A.device)
        return lambda: t.mv(A, b["x"], out=y)

    def layernorm(t, b, s):
        x = b["x"].view(s["rows"], s["cols"])
        return lambda: t.nn.functional.layer_norm(x, (s["cols"],), b["gamma"], b["beta"], s["eps"])

    return {"saxpy": saxpy, "transpose_naive": transpose, "matmul_naive": matmul,
            "block_sum": block_sum, "block_max": block_max, "softmax_rows": softmax,
            "stencil_1d": stencil, "gather_scale": gather, "relu_bias": relu_bias,
            "histogram": histogram, "conv2d_3x3": conv2d, "gemv_rows": gemv,
            "layernorm_rows": layernorm, "colsum": colsum}


def time_torch(case, op_builder, l2_bytes: int, repetitions: int, warmup: int = 5) -> dict:
    """Median, quartiles and minimum of the PyTorch operator in microseconds, timed like the
    runner: warm-up, L2 flushed (a write of ``2 * l2_bytes``) before each launch, CUDA events
    around each launch."""
    torch = need("torch", "torch", "timing the PyTorch operator")
    if not torch.cuda.is_available():
        raise MissingDependency("torch is installed but sees no CUDA device")
    # cuBLAS fp32, not TF32 tensor cores: the naive kernels compute in fp32 (issue 14's SGEMM
    # goal is against cuBLAS fp32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    from gpu_runner.inputs import make_inputs
    inputs = make_inputs(case, seed=1)
    tensors, scalars = {}, {}
    for a in case.args:
        if a.kind == "buffer":
            host = inputs.get(a.name)
            tensors[a.name] = (torch.from_numpy(host).cuda() if host is not None else
                               torch.zeros(a.length, dtype=getattr(torch, a.dtype), device="cuda"))
        else:
            scalars[a.name] = a.value
    op = op_builder(torch, tensors, scalars)
    scratch = torch.empty(2 * l2_bytes, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        op()
    torch.cuda.synchronize()
    pairs = []
    for _ in range(repetitions):
        scratch.fill_(1)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        op()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) * 1000.0 for s, e in pairs)
    q = statistics.quantiles(times, n=4)
    return {"median_us": statistics.median(times), "q1_us": q[0], "q3_us": q[2],
            "min_us": times[0], "samples": len(times), "torch": torch.__version__,
            "tf32": bool(torch.backends.cuda.matmul.allow_tf32)}


# ---------------------------------------------------------------- one example

def _timing(t) -> Optional[dict]:
    return dataclasses.asdict(t) if t is not None else None


def bench_one(path: Path, client, device, args) -> dict:
    from cudalens.optimize import optimize
    from cudalens.spec.resolve import build_problem, build_variant, sizes_for
    from cudalens.target import load_target

    target = load_target(path)
    spec = target.spec
    name = target.kernel.name
    rec: dict[str, Any] = {"file": str(path.relative_to(ROOT)), "kernel": name}
    problem = build_problem(spec, target.kernel)
    nominal = problem.cases[0]
    baseline = build_variant("baseline", target.text, target.kernel.qualified_name, spec,
                             spec.launch, device.sm_count)

    print(f"[{name}] cudalens search, budget {args.budget}", flush=True)
    from cudalens.engine.events import DETAIL_EVENTS, Compiling, Verifying

    result = optimize(target, client, budget=args.budget, repetitions=args.repetitions,
                      on_event=lambda e: print(f"    {e.text()}", flush=True)
                      if not isinstance(e, (Compiling, Verifying, *DETAIL_EVENTS)) else None)
    if args.record is not None:
        from cudalens.present import result_record
        run = result_record(result)
        run["copy_bandwidth_gbps"] = run.pop("device")["copy_bandwidth_gbps"]
        run["file"] = str(Path(run["file"]).resolve().relative_to(ROOT))
        args.recorded.append(run)
    ours, best, fields = pick_ours(result)
    rec.update(fields)

    print(f"[{name}] Kernel Tuner, block size only", flush=True)
    dims = max(i + 1 for i, b in enumerate(spec.launch.block) if b.strip() != "1")
    size, why = kt_problem(spec, sizes_for(spec, "nominal"), device.sm_count)
    kt_variant = None
    if size is None:
        rec["kernel_tuner"] = {"block": None, "note": why}
    else:
        kt = kernel_tuner_best(target, nominal, dims, size, args.kt_iterations)
        rec["kernel_tuner"] = kt
        block = tuple(str(b) for b in kt["block"]) + tuple(spec.launch.block[dims:])
        kt_launch = dataclasses.replace(spec.launch, block=block)
        kt_variant = build_variant("kernel_tuner", target.text, target.kernel.qualified_name,
                                   spec, kt_launch, device.sm_count)

    print(f"[{name}] side by side: baseline, ours, Kernel Tuner's block", flush=True)
    variants, labels = [], []
    for label, cand in (("ours", ours), ("best_candidate", best)):
        if cand is not None:
            variants.append(build_variant(label, cand.source, target.kernel.qualified_name,
                                          spec, cand.launch, device.sm_count,
                                          options=cand.options))
            labels.append(label)
    if kt_variant is not None:
        variants.append(kt_variant)
        labels.append("kernel_tuner")
    ev = client.evaluate(problem, baseline, variants, repetitions=args.repetitions)
    if ev.error:
        raise RuntimeError(f"{name}: the baseline could not be measured: {ev.error}")
    rec["baseline"] = _timing(ev.baseline)
    for label, cr in zip(labels, ev.candidates):
        rec.setdefault(label, {}).update({
            "verdict": cr.verdict.status, "reason": cr.verdict.reason,
            "timing": _timing(cr.timing),
            "speedup": dataclasses.asdict(cr.speedup) if cr.speedup else None})
    if ours is None:
        rec["ours"].update(original_kept(rec["baseline"]))
    if kt_variant is None:
        rec["kernel_tuner"].update({"timing": rec["baseline"],
                                    "speedup": {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0}})

    print(f"[{name}] PyTorch", flush=True)
    ops = torch_ops()
    if name in ops:
        pt = time_torch(nominal, ops[name], device.l2_bytes, args.repetitions)
        pt["speedup"] = ev.baseline.median_us / pt["median_us"]
        pt["achieved_gbps"] = nominal.bytes_moved / (pt["median_us"] * 1e3)
        pt["percent_of_copy"] = 100.0 * pt["achieved_gbps"] / device.copy_bandwidth_gbps
        if nominal.flops:
            pt["gflops"] = nominal.flops / (pt["median_us"] * 1e3)
        rec["pytorch"] = pt
    else:
        rec["pytorch"] = {"note": f"no PyTorch equivalent listed for {name}"}
    rec["goals"] = goals(rec)
    return rec


ORIGINAL_KEPT = "original kept (no candidate significantly faster)"


def pick_ours(result) -> tuple[Any, Any, dict]:
    """What a row shows as ours for ``result`` (a ``cudalens.optimize.OptimizeResult``): what
    ``cudalens optimize`` would offer, its ``winner`` (verified, 95% CI of the speedup above
    1), else the original (a best candidate at 0.95x was shown as ours before 2026-12-03).

    Returns ``(ours, best, fields)``: ``ours`` the winner's ``Candidate`` or None (the original
    kept); ``best`` without a winner the fastest verified candidate (``best_verified``), timed
    side by side but recorded apart, else None; ``fields`` the record's ``ours`` entry and,
    with ``best``, its ``best_candidate`` entry (label, explanation, the search's speedup)."""
    ours = result.winner.candidate if result.winner is not None else None
    fields: dict[str, Any] = {"ours": {"label": ours.label if ours else ORIGINAL_KEPT,
                                       "explanation": ours.explanation if ours else "",
                                       "significant": ours is not None,
                                       "candidates": len(result.rows)}}
    runner_up = result.best_verified if ours is None else None
    best = runner_up.candidate if runner_up is not None else None
    if best is not None:
        fields["best_candidate"] = {
            "label": best.label, "explanation": best.explanation,
            "search_speedup": dataclasses.asdict(runner_up.result.speedup)}
    return ours, best, fields


def original_kept(baseline: Optional[dict]) -> dict:
    """The ``timing`` and ``speedup`` of ours when the original is kept: the baseline's
    timing (a dict of ``gpu_runner.report.Timing``), 1.00x exactly."""
    return {"timing": baseline, "speedup": {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0}}


def goals(rec: dict) -> dict:
    """The issue's goals for one kernel, each True/False (None where it does not apply)."""
    ours = (rec["ours"].get("speedup") or {}).get("value")
    kt = (rec["kernel_tuner"].get("speedup") or {}).get("value")
    pct = ((rec["ours"].get("timing") or {}).get("percent_of_copy"))
    ok_verdict = rec["ours"].get("verdict", "passed") == "passed"
    ours_us = (rec["ours"].get("timing") or {}).get("median_us")
    torch_us = (rec.get("pytorch") or {}).get("median_us")
    return {
        "verified": ok_verdict,
        "at_least_kernel_tuner": (ours >= kt) if ours is not None and kt is not None else None,
        "elementwise_85_percent_of_copy": (pct >= 85.0) if rec["kernel"] in ELEMENTWISE and
        pct is not None else None,
        "at_least_2x": (ours >= 2.0) if rec["kernel"] in TWO_X and ours is not None else None,
        "elementwise_90_percent_of_copy": (pct >= 90.0) if rec["kernel"] in ELEMENTWISE and
        pct is not None else None,
        # time against cuBLAS (torch.mm, TF32 off): at least half its throughput
        "sgemm_50_percent_of_cublas": (torch_us / ours_us >= 0.5) if rec["kernel"] in SGEMM
        and ours_us and torch_us else None,
    }


def table(result: dict) -> str:
    """A markdown table of a results file (``main``'s JSON: ``runs`` of ``bench_one``'s
    records). Ours is the original (``B us, 1.00x (original kept)``, the baseline's rate)
    where the search found nothing significantly faster, whatever its best candidate
    measured: ``cudalens optimize`` would offer nothing there."""
    lines = ["| kernel | baseline | ours | Kernel Tuner (block) | PyTorch | ours: % of copy / GFLOP/s |",
             "|---|---|---|---|---|---|"]
    for r in result["runs"]:
        if "error" in r:
            lines.append(f"| {r['kernel']} | error: {r['error'][:60]} | | | | |")
            continue
        b = r["baseline"]["median_us"]

        def cell(x):
            sp = (x.get("speedup") or {}).get("value") if isinstance(x.get("speedup"), dict) \
                else x.get("speedup")
            t = (x.get("timing") or {}).get("median_us") if "timing" in x else x.get("median_us")
            return f"{t:,.1f} us ({sp:.2f}x)" if t and sp else "n/a"

        kt_block = "x".join(map(str, r["kernel_tuner"].get("block") or [])) or "fixed"
        kept = not r["ours"].get("significant")  # the tool offers nothing: the original
        ours_t = (r["baseline"] if kept else r["ours"].get("timing")) or {}
        ours_cell = f"{b:,.1f} us, 1.00x (original kept)" if kept else cell(r["ours"])
        perf = f"{ours_t.get('percent_of_copy', 0):.0f}%"
        if ours_t.get("gflops"):
            perf += f" / {ours_t['gflops']:,.0f}"
        lines.append(f"| {r['kernel']} | {b:,.1f} us | {ours_cell} | "
                     f"{cell(r['kernel_tuner'])} [{kt_block}] | {cell(r.get('pytorch', {}))} | "
                     f"{perf} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commit", required=True, help="commit of the code being measured")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--repetitions", type=int, default=50)
    ap.add_argument("--kt-iterations", type=int, default=7,
                    help="Kernel Tuner's launches per configuration (its default: 7)")
    ap.add_argument("--record", type=Path, default=None,
                    help="also write every optimize run here in the format of "
                         "benchmarks/run_examples.py (what the language server's CI replays)")
    ap.add_argument("examples", nargs="*", help="example files (default: examples/*.cu)")
    args = ap.parse_args()
    args.recorded = []
    try:
        need("kernel_tuner", "kernel_tuner", "tuning the block size with Kernel Tuner")
        need("torch", "torch", "timing the PyTorch operator")
        need("pycuda", "pycuda", "Kernel Tuner's CUDA backend")
    except MissingDependency as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from cudalens.runner_client import RunnerClient

    files = [Path(f).resolve() for f in args.examples] or sorted((ROOT / "examples").glob("*.cu"))
    result = {"benchmark": "cudalens vs Kernel Tuner (block size) vs PyTorch on examples/",
              "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "commit": args.commit, "device": None,
              "settings": {"budget": args.budget, "repetitions": args.repetitions,
                           "kernel_tuner_iterations": args.kt_iterations},
              "runs": []}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with RunnerClient() as client:
        device = client.device_info()
        result["device"] = dataclasses.asdict(device)
        for f in files:
            try:
                result["runs"].append(bench_one(f, client, device, args))
            except MissingDependency as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
            except Exception as exc:  # one example failing must not lose the others
                result["runs"].append({"file": str(f), "kernel": f.stem,
                                       "error": f"{type(exc).__name__}: {exc}"})
            args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
            if args.record is not None:
                args.record.write_text(json.dumps({
                    "benchmark": "cudalens optimize on examples/ (recorded by "
                                 "benchmarks/bench_optimizer.py)",
                    "date": result["date"], "commit": args.commit,
                    "device": result["device"],
                    "settings": {"budget": args.budget, "repetitions": args.repetitions},
                    "runs": args.recorded}, indent=2) + "\n")
    print(table(result))
    return 0 if all("error" not in r for r in result["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
