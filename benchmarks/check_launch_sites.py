"""GPU check: accepting a winner keeps the user's program correct, launch included.

For each example with host code (``examples/host/NAME/``: the kernel ``NAME.cu``, its spec and
a program ``main.cu`` that launches it and prints outputs), in a scratch copy:

1. build and run the program as it is (``before``);
2. ``cudalens optimize NAME.cu --apply`` on this machine's GPU (the kernel, its launch sites
   and the spec rewritten, or a refusal when a launch cannot be rewritten);
3. build and run the program again (``after``) and compare every printed value with
   ``before`` (relative 1e-4 of the output's scale: sums may be added in another order; a
   NaN, a value the kernel left unwritten, is a difference);
4. the control: the accepted kernel with the program's original ``main.cu`` (the launch not
   rewritten), to show what a kernel-only apply would have shipped.

Writes a log (text) and the optimize records (JSON) to ``benchmarks/results/`` and exits 1 when
any ``after`` differs from its ``before``.

Run (from the repository root, about 2-4 minutes per example on an H200):
    python benchmarks/check_launch_sites.py [--budget 24] [--only layernorm]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST = ROOT / "examples" / "host"
RESULTS = ROOT / "benchmarks" / "results"
_VALUE = re.compile(r"^(?P<name>[^=]+?)\s*=\s*(?P<value>\S+)\s*$")
RTOL = 1e-4


@dataclass(frozen=True)
class Outcome:
    name: str
    applied: bool
    same: bool
    control_same: bool | None
    detail: str


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    # this checkout's cudalens, whatever is installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "server"), str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False, env=env)


def build_and_run(folder: Path, name: str, log: list[str]) -> dict[str, float]:
    """Builds ``folder/main.cu`` with nvcc and runs it; its printed ``NAME = VALUE`` lines.

    Raises:
        RuntimeError: the build or the run failed (with nvcc's or the program's output).
    """
    # A plain file name: nvcc's fatbinary step refuses one with spaces or parentheses in it.
    exe = folder / ("prog_" + re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_"))
    built = _run(["nvcc", "-O2", "-arch=sm_90", "-o", str(exe), "main.cu"], folder)
    if built.returncode != 0:
        raise RuntimeError(f"nvcc failed in {folder} ({name}):\n{built.stderr}")
    ran = _run([str(exe)], folder)
    if ran.returncode != 0:
        raise RuntimeError(f"{exe} exited with {ran.returncode}:\n{ran.stderr}")
    values = {}
    for line in ran.stdout.splitlines():
        m = _VALUE.match(line)
        if m:
            values[m.group("name")] = float(m.group("value"))
    log.append(f"  {name}: {len(values)} values printed")
    return values


def compare(before: dict[str, float], after: dict[str, float]) -> str:
    """"" when every value matches within ``RTOL`` of the outputs' scale, else the first
    differences, in words."""
    if before.keys() != after.keys():
        return f"different values printed: {sorted(before.keys() ^ after.keys())[:5]}"
    finite = [abs(v) for v in before.values() if math.isfinite(v)]
    scale = max(finite, default=1.0) or 1.0
    bad = [(k, before[k], after[k]) for k in before
           if not (math.isfinite(after[k]) and math.isfinite(before[k])
                   and abs(after[k] - before[k]) <= RTOL * scale)]
    if not bad:
        return ""
    shown = "; ".join(f"{k}: {b!r} -> {a!r}" for k, b, a in bad[:5])
    return f"{len(bad)} of {len(before)} values differ ({shown})"


def check(example: Path, budget: int, log: list[str], records: dict) -> Outcome:
    name = example.name
    with tempfile.TemporaryDirectory(prefix=f"cudalens-launch-{name}-") as tmp:
        ws = Path(tmp) / name
        shutil.copytree(example, ws)
        (ws / ".git").mkdir()  # the workspace root searched for launch sites
        log.append(f"{name}: workspace {ws}")
        before = build_and_run(ws, "before", log)
        original_main = (ws / "main.cu").read_text()
        done = _run([sys.executable, "-m", "cudalens", "optimize", f"{name}.cu", "--apply",
                     "--proposer", "builtin", "--budget", str(budget), "--json", "r.json"], ws,
                    timeout=3000)
        log.append(f"  cudalens optimize --apply: exit {done.returncode}")
        log.extend("    " + line for line in done.stdout.splitlines()[-25:])
        log.extend("    stderr: " + line for line in done.stderr.splitlines()[-10:])
        if (ws / "r.json").is_file():
            records[name] = json.loads((ws / "r.json").read_text())
        if done.returncode != 0:
            return Outcome(name, False, True, None, f"not applied (exit {done.returncode})")
        after = build_and_run(ws, "after", log)
        diff = compare(before, after)
        control_same = None
        if (ws / "main.cu").read_text() != original_main:
            ctl = Path(tmp) / "control"
            shutil.copytree(ws, ctl)
            (ctl / "main.cu").write_text(original_main)
            control = build_and_run(ctl, "control (kernel applied, launch not rewritten)", log)
            cdiff = compare(before, control)
            control_same = not cdiff
            log.append(f"  control: {cdiff or 'same outputs'}")
        log.append(f"  after vs before: {diff or 'same outputs'}")
        return Outcome(name, True, not diff, control_same, diff or "same outputs")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=24)
    parser.add_argument("--only", help="one example folder name under examples/host")
    args = parser.parse_args()
    if shutil.which("nvcc") is None:
        print("error: nvcc is not on PATH", file=sys.stderr)
        return 2
    examples = sorted(p for p in HOST.iterdir() if (p / "main.cu").is_file()
                      and (args.only is None or p.name == args.only))
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    commit = _run(["git", "rev-parse", "--short", "HEAD"], ROOT).stdout.strip() or "unknown"
    log = [f"check_launch_sites {stamp} commit {commit}, budget {args.budget}"]
    records: dict = {}
    outcomes = []
    for example in examples:
        try:
            outcomes.append(check(example, args.budget, log, records))
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            log.append(f"{example.name}: FAILED: {exc}")
            outcomes.append(Outcome(example.name, False, False, None, f"FAILED: {exc}"))
    log.append("")
    for o in outcomes:
        control = ("" if o.control_same is None else
                   f"; kernel-only apply would be {'right' if o.control_same else 'WRONG'}")
        verdict = "OK" if o.same else "FAILED" if o.detail.startswith("FAILED") else "DIFFERENT"
        log.append(f"{o.name}: {'applied' if o.applied else 'not applied'}; "
                   f"{verdict}: {o.detail.removeprefix('FAILED: ')}{control}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    base = RESULTS / f"h200-launch-sites-{stamp}-{commit}"
    base.with_suffix(".log").write_text("\n".join(log) + "\n")
    base.with_suffix(".json").write_text(json.dumps(records, indent=1) + "\n")
    print("\n".join(log))
    print(f"log: {base.with_suffix('.log')}")
    return 0 if all(o.same for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
