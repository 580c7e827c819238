"""How ``cudalens plan`` and the language server's analysis on open grow with the file: files of
30, 300 and 3,000 trivial kernels (and, with ``--table-mb``, one kernel after a large
``__constant__`` table), timed side by side.

Usage (no GPU needed):
    python benchmarks/bench_plan_scale.py [--kernels 30 300 3000] [--table-mb 11] \\
        [--checkout DIR ...] [--timeout 600]

For each file, written into a temporary folder:

* **plan**: ``python -m cudalens plan FILE --kernel k7`` in a fresh process (nothing cached),
  from process start to exit; wall-clock seconds and the child's CPU seconds (user + system,
  ``resource.getrusage``), which a busy machine inflates less.
* **open**: what the language server does when the file is opened, in a fresh process:
  ``lsp.documents.analyze`` with a new ``IncrementalParser`` and ``SpecCache`` (the parse and
  a spec for every kernel, what the code lenses and hovers read), its wall-clock and CPU
  seconds measured inside that process. Files over the server's ``MAX_ANALYZED_BYTES`` are
  not analyzed by the server, and are not measured here.

``--with-spec`` adds each kernel file again with a written ``FILE.cu.spec`` of one section
per kernel (loading a written spec checks it against the kernel, and the file's sections).

``--checkout DIR`` (repeatable) measures another checkout of the repository too, each in its
own column (``PYTHONPATH=DIR/server:DIR``): the same script shows a change's before and after.
A run over ``--timeout`` seconds is killed and shown as ``>TIMEOUT``. The kernel generated is
``__global__ void kI(const float* x, float* y, int n)`` with a one-line guarded body; the
table is ``__constant__ float table[]`` of random numbers, twelve a line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_OPEN = r"""
import json, sys, time
from pathlib import Path
from cudalens.lsp.documents import MAX_ANALYZED_BYTES, SpecCache, analyze
from cudalens.source.incremental import IncrementalParser
path = Path(sys.argv[1]).resolve()
text = path.read_text()
if len(text.encode()) > MAX_ANALYZED_BYTES:
    print(json.dumps({"skipped": f"over MAX_ANALYZED_BYTES ({MAX_ANALYZED_BYTES})"}))
    sys.exit(0)
wall, cpu = time.perf_counter(), time.process_time()
snap = analyze(path.as_uri(), path, 1, text, "utf-16", SpecCache(), IncrementalParser())
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                  "kernels": len(snap.kernels),
                  "specs": sum(v.spec is not None for v in snap.kernels)}))
"""


def trivial_kernels(count: int) -> str:
    """``count`` kernels ``k0``..: ``y[i] = x[i] + I`` under ``if (i < n)``."""
    return "\n".join(
        f"__global__ void k{i}(const float* x, float* y, int n)\n{{\n"
        f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"    if (i < n) y[i] = x[i] + {i}.0f;\n}}\n" for i in range(count))


def spec_sections(count: int) -> str:
    """A written spec with a section for each of ``trivial_kernels(count)``, 8 lines each."""
    return "\n".join(
        f"kernel k{i}\nsize n = 1024\nin x: float[n]\nout y: float[n]\nscalar n: int = n\n"
        f"block = 256\ngrid = ceil_div(n, 256)\n" for i in range(count))


def table_file(megabytes: float, seed: int = 0) -> str:
    """A ``__constant__ float table[]`` of about ``megabytes`` MB, then one kernel ``scale``."""
    rng = random.Random(seed)
    rows, size, goal = ["__constant__ float table[] = {"], 0, int(megabytes * 1_000_000)
    while size < goal:
        row = "    " + "".join(f"{rng.random():.8f}f, " for _ in range(12))
        rows.append(row)
        size += len(row) + 1
    rows.append("    0.0f};\n")
    rows.append("__global__ void scale(const float* x, float* y, int n)\n{\n"
                "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "    if (i < n) y[i] = x[i] * table[i % 1000];\n}\n")
    return "\n".join(rows)


def _env(checkout: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{checkout / 'server'}{os.pathsep}{checkout}"
    return env


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def time_plan(checkout: Path, path: Path, kernel: str, timeout: float) -> dict:
    """One ``cudalens plan`` in a fresh process: wall and CPU seconds, or the failure."""
    before, wall = _child_cpu(), time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "cudalens", "plan", str(path), "--kernel",
                               kernel], env=_env(checkout), capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    out = {"wall": time.perf_counter() - wall, "cpu": _child_cpu() - before}
    if done.returncode != 0:
        out["error"] = (done.stderr or done.stdout).strip().splitlines()[-1:]
    else:
        out["first_line"] = done.stdout.splitlines()[0]
    return out


def time_open(checkout: Path, path: Path, timeout: float) -> dict:
    """The language server's analysis of ``path`` on open, in a fresh process."""
    try:
        done = subprocess.run([sys.executable, "-c", _OPEN, str(path)], env=_env(checkout),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cell(r: dict) -> str:
    if "timeout" in r:
        return f">{r['timeout']:.0f} s"
    if "skipped" in r:
        return "not analyzed"
    if "error" in r:
        return "error: " + " ".join(r["error"])[:40]
    return f"{r['wall']:7.2f} s ({r['cpu']:.2f} cpu)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", type=int, nargs="+", default=[30, 300, 3000])
    ap.add_argument("--table-mb", type=float, default=0.0,
                    help="also a file of one kernel after a __constant__ table this large")
    ap.add_argument("--checkout", type=Path, action="append", default=[],
                    help="another checkout to measure beside this one (repeatable)")
    ap.add_argument("--with-spec", action="store_true",
                    help="also each kernel file with a written FILE.cu.spec, a section a kernel")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--json", type=Path, help="also write every measurement here")
    args = ap.parse_args(argv)
    checkouts = [ROOT] + [c.resolve() for c in args.checkout]
    rows = []
    with tempfile.TemporaryDirectory(prefix="cudalens-plan-scale-") as tmp:
        files = []
        for n in args.kernels:
            path = Path(tmp) / f"kernels{n}.cu"
            path.write_text(trivial_kernels(n))
            files.append((f"{n} kernels", path, "k7" if n > 7 else "k0"))
            if args.with_spec:
                path = Path(tmp) / "specced" / f"kernels{n}.cu"
                path.parent.mkdir(exist_ok=True)
                path.write_text(trivial_kernels(n))
                path.with_name(path.name + ".spec").write_text(spec_sections(n))
                files.append((f"{n} + spec", path, "k7" if n > 7 else "k0"))
        if args.table_mb:
            path = Path(tmp) / "table.cu"
            path.write_text(table_file(args.table_mb))
            files.append((f"{args.table_mb:g} MB table", path, "scale"))
        for label, path, kernel in files:
            size = path.stat().st_size
            for checkout in checkouts:
                plan = time_plan(checkout, path, kernel, args.timeout)
                opened = time_open(checkout, path, args.timeout)
                rows.append({"file": label, "bytes": size, "checkout": str(checkout),
                             "plan": plan, "open": opened})
                print(f"{label:>14} ({size / 1e6:6.2f} MB)  {checkout.name:<14}  plan "
                      f"{_cell(plan):<24}  open {_cell(opened)}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S"),
                                         "load": os.getloadavg(), "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
