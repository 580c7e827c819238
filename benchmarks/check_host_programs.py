"""GPU check: for every example and every variant-corpus kernel, accepting the built-in winner
keeps a user's program around it correct, launch included (issue 17, item 4).

For each kernel ``K.cu`` with a spec (``examples/*.cu`` and ``tests/data/variants/*/*.cu``, or
the folders given with ``--kernels``), in a scratch workspace (the kernel, its spec, a ``.git``
folder so the workspace is searched for launch sites):

1. ``host_program.generate``: a user-style ``main.cu`` launching ``K`` with
   ``<<<grid, block[, shared]>>>`` written over its size variables, and its input files;
2. build it with nvcc and run it (``before``: the original kernel's outputs);
3. ``cudalens optimize K.cu --apply --accept-launch-change --proposer builtin`` on this GPU:
   the winner is written, with every launch site rewritten where the winner needs another
   launch. ``--accept-launch-change`` matters only where a site cannot be rewritten (the log
   then shows the "Not rewritten" line, and the kernel is reported ``site kept``);
4. build and run again (``after``), compare every output with ``before`` within the runner's
   tolerance (``host_program.compare_outputs``);
5. where the launch was rewritten: the control, the accepted kernel under the program's
   original ``main.cu`` (what a kernel-only apply would have shipped).

Verdicts per kernel: ``same`` (after equals before), ``DIFFERENT`` (it does not: the log says
where), ``no winner`` (nothing applied; the program is unchanged), ``not generated`` (the
generator cannot make a program: a template kernel), ``FAILED`` (a build, a run or the optimize
command failed; the log has its output). Writes ``NAME.log`` and ``NAME.json`` (one object per
kernel: launch before and after, winner, drop-in verdict, verdict, details, the optimize
record) under ``--out`` and exits 1 when any kernel is ``DIFFERENT`` or ``FAILED``.

Run on the H200 (from the repository root; about 1 minute per kernel at the default budget):
    python benchmarks/check_host_programs.py --out "$R" [--budget 8] [--only NAME]
The optimize runs share one runner the script starts (or ``CUDALENS_RUNNER_URL``'s, when set);
``--shard K/N`` checks every N-th kernel from the K-th (the device tool allows 10 minutes per
command).
``--build-only`` stops after building ``before`` (no GPU needed: checks the generator).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from host_program import HostProgram, Unsupported, compare_outputs, generate  # noqa: E402

DEFAULT_FOLDERS = (ROOT / "examples", *sorted((ROOT / "tests" / "data" / "variants").glob("*")))
_SITE = re.compile(r"^(Rewrote the launch at|Not rewritten:|No launch of)")


@dataclass
class Outcome:
    """One kernel's result (module doc). ``launch_before``/``launch_after``: the program's
    ``<<<...>>>`` before and after the apply; ``sites``: cudalens' lines about launch sites."""

    kernel: str
    file: str
    verdict: str
    detail: str = ""
    launch_before: str = ""
    launch_after: str = ""
    winner: Optional[str] = None
    winner_user_launch: Optional[str] = None
    sites: list[str] = field(default_factory=list)
    control: Optional[str] = None
    optimize_exit: Optional[int] = None
    record: Optional[dict] = None


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT / "server"), str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False, env=_env())


def build(folder: Path, name: str, nvcc: str) -> Path:
    """Builds ``folder/main.cu`` into ``folder/prog_NAME``.

    Raises:
        RuntimeError: nvcc failed (its output in the message)."""
    exe = folder / ("prog_" + re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_"))
    done = _run([nvcc, "-O2", "-arch=sm_90", "-o", str(exe), "main.cu"], folder)
    if done.returncode != 0:
        raise RuntimeError(f"nvcc failed in {folder} ({name}):\n{done.stderr[-4000:]}")
    return exe


def run_program(folder: Path, exe: Path, program: HostProgram) -> dict:
    """Runs ``exe`` in ``folder`` (after removing old outputs) and reads its outputs.

    Raises:
        RuntimeError: the program failed or did not write its outputs."""
    for b in program.outputs:
        (folder / f"{b.name}.out").unlink(missing_ok=True)
    done = _run([str(exe)], folder, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{exe.name} exited with {done.returncode}: {done.stderr[-2000:]}")
    try:
        return program.read_outputs(folder)
    except ValueError as exc:
        raise RuntimeError(str(exc)) from None


def _launch_in(main: str, kernel: str) -> str:
    m = re.search(rf"\b{re.escape(kernel)}\s*(<<<.*?>>>)", main, re.S)
    return " ".join(m.group(1).split()) if m else ""


def _user_launch_words(record: dict) -> Optional[str]:
    from cudalens.report.data import from_record  # noqa: PLC0415

    report = from_record(record)
    win = report.winner
    return None if win is None or win.user_launch is None else win.user_launch.words


def _control(ctl: Path, program: HostProgram, before: dict, nvcc: str) -> str:
    """The words for the accepted kernel under the program's original launch (what a
    kernel-only apply would ship): ``right``, ``WRONG: <first difference>`` or ``FAULTS:
    <the program's error>``. A fault there is the control's finding, not a failure of the
    check: the program that cudalens rewrote is judged by ``after``."""
    exe = build(ctl, "control", nvcc)
    try:
        got = run_program(ctl, exe, program)
    except RuntimeError as exc:
        return f"kernel-only apply: FAULTS: {' '.join(str(exc).split())[:300]}"
    cdiff = compare_outputs(program, before, got)
    return f"kernel-only apply: {'WRONG: ' + cdiff if cdiff else 'right'}"


def check_kernel(src: Path, args, log: list[str]) -> Outcome:
    from cudalens.target import load_target  # noqa: PLC0415

    label = f"{src.parent.name}/{src.name}"
    with tempfile.TemporaryDirectory(prefix="cudalens-host-") as tmp:
        ws = Path(tmp) / src.stem
        ws.mkdir()
        for f in (src, src.with_name(src.name + ".spec")):
            shutil.copy(f, ws / f.name)
        (ws / ".git").mkdir()
        kernel_file = ws / src.name
        try:
            target = load_target(kernel_file)
            program = generate(target)
        except Unsupported as exc:
            log.append(f"{label}: not generated: {exc}")
            return Outcome("?", label, "not generated", str(exc))
        name = target.kernel.name
        out = Outcome(name, label, "FAILED", launch_before=program.launch)
        program.write(ws)
        original_main = (ws / "main.cu").read_text()
        log.append(f"{label}: {name}, sizes {program.sizes}, launch {program.launch}")
        exe = build(ws, "before", args.nvcc)
        if args.build_only:
            out.verdict, out.detail = "built", "built before (--build-only)"
            log.append("  built (--build-only)")
            return out
        before = run_program(ws, exe, program)
        cmd = [sys.executable, "-m", "cudalens", "optimize", src.name, "--apply",
               "--accept-launch-change", "--proposer", "builtin", "--budget", str(args.budget),
               "--repetitions", str(args.repetitions), "--json", "r.json"]
        done = _run(cmd, ws, timeout=args.optimize_timeout)
        out.optimize_exit = done.returncode
        log.append(f"  cudalens optimize --apply --accept-launch-change: exit {done.returncode}")
        out.sites = [ln for ln in done.stdout.splitlines() if _SITE.match(ln)]
        log.extend(f"    {ln}" for ln in out.sites)
        if (ws / "r.json").is_file():
            out.record = json.loads((ws / "r.json").read_text())
            out.winner = (out.record.get("winner") or {}).get("label")
            try:
                out.winner_user_launch = _user_launch_words(out.record)
            except Exception as exc:  # noqa: BLE001 - the words are extra information
                out.winner_user_launch = f"(not readable: {exc})"
        if done.returncode != 0:
            log.extend("    " + ln for ln in (done.stdout + done.stderr).splitlines()[-20:])
            out.detail = f"cudalens optimize exited with {done.returncode}"
            return out
        main_after = (ws / "main.cu").read_text()
        out.launch_after = _launch_in(main_after, name)
        if (ws / src.name).read_text() == src.read_text():
            out.verdict, out.detail = "no winner", "nothing applied: the program is unchanged"
            log.append(f"  {out.detail}")
            return out
        log.append(f"  winner: {out.winner}; under your launch: {out.winner_user_launch}")
        after = run_program(ws, build(ws, "after", args.nvcc), program)
        diff = compare_outputs(program, before, after)
        kept = any(s.startswith(("Not rewritten:", "No launch of")) for s in out.sites)
        out.verdict = "DIFFERENT" if diff else ("same (site kept)" if kept else "same")
        out.detail = diff or "every output within the runner's tolerance of before"
        if main_after != original_main:
            ctl = Path(tmp) / "control"
            shutil.copytree(ws, ctl)
            (ctl / "main.cu").write_text(original_main)
            out.control = _control(ctl, program, before, args.nvcc)
            log.append(f"  {out.control}")
        log.append(f"  after vs before: {out.verdict}: {out.detail}")
        return out


class SharedRunner:
    """One ``cudalens runner`` for every optimize run of the check (each would otherwise start
    its own and measure the copy bandwidth again): started on a free port, its URL put in
    ``CUDALENS_RUNNER_URL`` of the children, stopped at the end (stdin closed: it exits with
    its parent). Not started when ``CUDALENS_RUNNER_URL`` is set already."""

    def __init__(self, folder: Path) -> None:
        self.proc: Optional[subprocess.Popen] = None
        if os.environ.get("CUDALENS_RUNNER_URL"):
            return
        port_file = folder / "runner.port"
        self.log = open(folder / "runner.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cudalens", "runner", "--port", "0", "--port-file",
             str(port_file), "--exit-with-parent"], stdin=subprocess.PIPE,
            stdout=self.log, stderr=subprocess.STDOUT, env=_env())
        deadline = time.monotonic() + 120
        while not port_file.is_file() or not port_file.read_text().strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the shared runner did not start: see {folder}/runner.log")
            time.sleep(0.2)
        os.environ["CUDALENS_RUNNER_URL"] = f"http://127.0.0.1:{port_file.read_text().strip()}"

    def stop(self) -> None:
        if self.proc is None:
            return
        os.environ.pop("CUDALENS_RUNNER_URL", None)
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.log.close()


def kernels_in(folders) -> list[Path]:
    """Every ``*.cu`` with a ``.spec`` beside it in ``folders`` (sorted per folder); an entry
    that is a ``.cu`` file is taken as it is."""
    found = []
    for folder in folders:
        if Path(folder).is_file():
            found.append(Path(folder))
            continue
        found += sorted(p for p in Path(folder).glob("*.cu")
                        if p.with_name(p.name + ".spec").is_file())
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results",
                        help="folder for the log and JSON")
    parser.add_argument("--kernels", type=Path, nargs="*",
                        help="folders of kernels with specs, or .cu files (default: examples/ and every "
                             "tests/data/variants/ folder)")
    parser.add_argument("--only", help="only kernels whose file name (without .cu) is this")
    parser.add_argument("--budget", type=int, default=8)
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--optimize-timeout", type=float, default=900)
    parser.add_argument("--nvcc", default=shutil.which("nvcc") or "nvcc")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--shard", help="K/N: only the K-th of every N kernels (1-based), to "
                                        "split the check over several commands")
    args = parser.parse_args()
    if shutil.which(args.nvcc) is None and not Path(args.nvcc).is_file():
        print(f"error: nvcc not found ({args.nvcc})", file=sys.stderr)
        return 2
    files = [p for p in kernels_in(args.kernels or DEFAULT_FOLDERS)
             if args.only is None or p.stem == args.only]
    if args.shard:
        k, n = (int(x) for x in args.shard.split("/"))
        files = files[k - 1::n]
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    commit = _run(["git", "rev-parse", "--short", "HEAD"], ROOT).stdout.strip() or "unknown"
    log = [f"check_host_programs {stamp} commit {commit}, budget {args.budget}, repetitions "
           f"{args.repetitions}, {len(files)} kernels"]
    outcomes = []
    args.out.mkdir(parents=True, exist_ok=True)
    runner = None if args.build_only else SharedRunner(args.out)
    try:
        for src in files:
            try:
                outcomes.append(check_kernel(src, args, log))
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                log.append(f"{src.parent.name}/{src.name}: FAILED: {exc}")
                outcomes.append(Outcome("?", f"{src.parent.name}/{src.name}", "FAILED",
                                        str(exc)))
            print(log[-1], flush=True)
    finally:
        if runner is not None:
            runner.stop()
    log.append("")
    for o in outcomes:
        change = (f"; launch {o.launch_before} -> {o.launch_after}"
                  if o.launch_after and o.launch_after != o.launch_before else "")
        log.append(f"{o.file}: {o.verdict}{change}"
                   + (f"; {o.winner_user_launch}" if o.winner_user_launch else "")
                   + (f"; {o.control}" if o.control else "")
                   + (f"; {o.detail}" if o.verdict in ("DIFFERENT", "FAILED") else ""))
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.verdict] = counts.get(o.verdict, 0) + 1
    log.append("totals: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    shard = f"-shard{args.shard.replace('/', 'of')}" if args.shard else ""
    base = args.out / f"h200-host-programs-{stamp}-{commit}{shard}"
    base.with_suffix(".log").write_text("\n".join(log) + "\n")
    base.with_suffix(".json").write_text(json.dumps([asdict(o) for o in outcomes], indent=1)
                                         + "\n")
    print("\n".join(log[-len(outcomes) - 2:]))
    print(f"log: {base.with_suffix('.log')}")
    return 1 if any(o.verdict in ("DIFFERENT", "FAILED") for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
