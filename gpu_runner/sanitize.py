"""compute-sanitizer on one launch of a variant: races, invalid accesses, uninitialized reads
and barrier errors, at their source lines (``SanitizeReport``).

``sanitize_variant(problem, variant)`` writes the request to a temporary file and runs, once
per tool (``memcheck``, ``racecheck``, ``initcheck``, ``synccheck``), in a subprocess::

    compute-sanitizer --tool TOOL --target-processes application-only \\
        --error-exitcode 86 <python> -m gpu_runner.sanitize_launch <temporary request file>

Every argument is fixed here or made here (the compute-sanitizer found on this machine, this
Python, the temporary file's path): nothing from the request's text reaches the command line.
The launch script (``sanitize_launch``) builds the variant with ``-lineinfo`` under the file
name ``sanitize_launch.SOURCE_NAME`` and launches it once on the ragged case (the sizes chosen
not to be multiples of the block; the first case when there is none), with buffers of exactly
their sizes. The text report of each tool is parsed by ``sanitizer_text``; a finding located in
the variant's source has ``own=True`` and its line is the variant source's own line.

A kernel that faults under memcheck ends the launch script with exit status 4 after memcheck
printed why: its findings are the answer. A kernel that faults under another tool (which does
not stop invalid accesses: a kernel without a bounds check may write past its buffers there)
gives that tool's run no findings and a ``note`` saying so; the other tools' runs stand. Exit
status 3 (the variant did not compile or load) is ``VARIANT_FAILED``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional, Sequence

from gpu_runner.problem import Problem, Variant, to_dict
from gpu_runner.sanitize_launch import EXIT_KERNEL_FAILED, EXIT_VARIANT_FAILED, SOURCE_NAME
from gpu_runner.sanitizer_text import TOOLS, Finding, error_summary, parse_findings

SANITIZER_FALLBACKS = ("/usr/local/cuda/bin/compute-sanitizer",)
DEFAULT_TIMEOUT_S = 120.0  # per tool
ERROR_EXITCODE = 86  # compute-sanitizer's exit status when it reported errors
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent

# ``SanitizeError.kind``
SANITIZER_MISSING = "sanitizer_missing"
TIMEOUT = "timeout"
VARIANT_FAILED = "variant_failed"
FAILED = "failed"
KINDS = (SANITIZER_MISSING, TIMEOUT, VARIANT_FAILED, FAILED)


class SanitizeError(RuntimeError):
    """No sanitizer report could be made; the message says why, ``kind`` is one of ``KINDS``."""

    def __init__(self, message: str, kind: str = FAILED):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class ToolRun:
    """One tool's run: its findings, the errors its summary counted (None: no summary line),
    its wall time in seconds, and ``note``: the launch script's failure message when the
    kernel failed under the tool (memcheck stops a kernel at an invalid access)."""

    tool: str
    findings: tuple[Finding, ...]
    errors: Optional[int]
    seconds: float
    note: str = ""


@dataclass(frozen=True)
class SanitizeReport:
    """Every tool's run on ``variant`` (its label) for ``case`` (the case's label)."""

    variant: str
    case: str
    runs: tuple[ToolRun, ...]

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for run in self.runs for f in run.findings)

    @property
    def blocking(self) -> tuple[Finding, ...]:
        """The findings that make the kernel unusable as a reference (``Finding.blocking``)."""
        return tuple(f for f in self.findings if f.blocking)


def find_sanitizer() -> Optional[str]:
    """The ``compute-sanitizer`` executable: on PATH, else under ``$CUDA_HOME/bin`` or
    /usr/local/cuda/bin; None when there is none."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    for candidate in ([str(Path(home) / "bin" / "compute-sanitizer")] if home else []) + \
            list(SANITIZER_FALLBACKS):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def sanitizer_command(sanitizer: str, tool: str, request_file: str) -> list[str]:
    """The command line of one tool (see the module doc)."""
    return [sanitizer, "--tool", tool, "--target-processes", "application-only",
            "--error-exitcode", str(ERROR_EXITCODE),
            sys.executable, "-m", "gpu_runner.sanitize_launch", request_file]


def sanitized_case(problem: Problem) -> int:
    """The index of the case the sanitizer runs: the ragged one, else the first."""
    return next((i for i, c in enumerate(problem.cases) if c.label == "ragged"), 0)


def _own(finding: Finding) -> Finding:
    if Path(finding.file).name == SOURCE_NAME:
        return replace(finding, file=SOURCE_NAME, own=True)
    return finding


def _script_lines(text: str) -> str:
    """The launch script's message (its ``sanitize_launch:`` line and the lines after it that
    are not compute-sanitizer's), lines joined with " | ", at most 2000 characters."""
    lines, on = [], False
    for ln in text.splitlines():
        on = on or ln.startswith("sanitize_launch:")
        if on and ln.strip() and not ln.startswith("========="):
            lines.append(ln.strip())
    return " | ".join(lines)[:2000]


def sanitize_variant(problem: Problem, variant: Variant, *, device_index: int = 0,
                     timeout_s: float = DEFAULT_TIMEOUT_S, tools: Sequence[str] = TOOLS,
                     sanitizer: Optional[str] = None) -> SanitizeReport:
    """Runs each of ``tools`` on one launch of ``variant`` (module doc). ``timeout_s`` bounds
    each tool's run.

    Raises:
        SanitizeError: compute-sanitizer is missing, a tool did not finish within
            ``timeout_s``, the variant did not compile or launch (the launch script's message),
            or compute-sanitizer failed without a report (its last lines in the message).
        ValueError: a tool not in ``TOOLS``.
    """
    bad = [t for t in tools if t not in TOOLS]
    if bad:
        raise ValueError(f"unknown compute-sanitizer tool(s) {bad}; expected some of {TOOLS}")
    sanitizer = sanitizer or find_sanitizer()
    if sanitizer is None:
        raise SanitizeError("compute-sanitizer was not found on PATH, under $CUDA_HOME/bin or in "
                            "/usr/local/cuda/bin (it comes with the CUDA toolkit)",
                            SANITIZER_MISSING)
    case = sanitized_case(problem)
    request = {"problem": to_dict(problem), "variant": to_dict(variant), "case": case,
               "device_index": int(device_index)}
    runs = []
    with tempfile.TemporaryDirectory(prefix="cudalens-sanitize-") as tmp:
        request_file = str(Path(tmp) / "request.json")
        Path(request_file).write_text(json.dumps(request), encoding="utf-8")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(_PACKAGE_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
        for tool in tools:
            started = time.monotonic()
            code, out, err = _run(sanitizer_command(sanitizer, tool, request_file), env, tmp,
                                  timeout_s, f"{tool} on {variant.label}", sanitizer)
            runs.append(_tool_run(tool, code, out + "\n" + err, time.monotonic() - started,
                                  variant.label))
    return SanitizeReport(variant=variant.label, case=problem.cases[case].label,
                          runs=tuple(runs))


def _tool_run(tool: str, code: int, text: str, seconds: float, label: str) -> ToolRun:
    findings = tuple(_own(f) for f in parse_findings(tool, text))
    note = _script_lines(text)
    if code in (0, ERROR_EXITCODE, EXIT_KERNEL_FAILED) or findings:
        if code == EXIT_KERNEL_FAILED and not note:
            note = f"the kernel failed under {tool} (exit status {code})"
        return ToolRun(tool, findings, error_summary(text), round(seconds, 3),
                       note if code != 0 else "")
    if code == EXIT_VARIANT_FAILED and note:
        raise SanitizeError(f"{label} did not compile or launch under {tool}: {note}",
                            VARIANT_FAILED)
    tail = " | ".join(ln.strip() for ln in text.strip().splitlines()[-6:])
    raise SanitizeError(f"compute-sanitizer {tool} failed on {label} (exit status {code}) "
                        f"without a report: {tail or 'no output'}")


def _run(cmd: list[str], env: dict, cwd: str, timeout_s: float, what: str,
         sanitizer: str) -> tuple[int, str, str]:
    """Runs ``cmd`` in its own process group; on timeout the whole group (compute-sanitizer
    and the Python it started) is killed. Raises ``SanitizeError`` (``TIMEOUT``, or
    ``FAILED`` when it cannot be started)."""
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="replace", env=env, cwd=cwd, start_new_session=True)
    except OSError as exc:
        raise SanitizeError(f"compute-sanitizer ({sanitizer}) could not be started: {exc}") \
            from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise SanitizeError(f"compute-sanitizer {what} did not finish within {timeout_s:g} s",
                            TIMEOUT) from None
    return proc.returncode, stdout, stderr
