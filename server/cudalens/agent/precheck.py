"""Compiling a spliced candidate with the local nvcc before it reaches the runner.

Compile errors then come back with the lines of the candidate's code and the offending source
line, without a GPU and without spending a runner batch. Needs nvcc, not a GPU; where nvcc is
missing the pre-check is skipped (the runner's compiler still reports errors, mapped the same
way by ``map_compiler_log``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from cudalens.agent.splice import Spliced
from cudalens.check import NvccNotFound, NvccTimeout, compile_check
from cudalens.check.report import CheckResult, Diagnostic, KernelResources

MAX_ERRORS = 8  # errors fed back per candidate: the first ones are the ones that matter
_LOG_LINE = re.compile(r"^(?P<file>[^\s()][^()]*)\((?P<line>\d+)\)(?::\s*|\s+)(?P<msg>.*)$")


@dataclass(frozen=True)
class CompileProblem:
    """One compiler error, placed in the candidate's code where possible.

    ``line``: 1-based line of the candidate's code (None when the error is elsewhere or has no
    line); ``file_line``: the line in the whole file; ``source``: the text of that line.
    """

    message: str
    line: Optional[int] = None
    file_line: Optional[int] = None
    source: Optional[str] = None

    def __str__(self) -> str:
        if self.line is not None:
            where = f"line {self.line} of your code"
        elif self.file_line is not None:
            where = f"line {self.file_line} of the file (outside your code)"
        else:
            where = "compiler"
        number = self.line or self.file_line
        shown = f"\n    {number} | {self.source.strip()}" if self.source else ""
        return f"{where}: {self.message}{shown}"


def arch_of(compute_capability: tuple[int, int]) -> str:
    """``(9, 0)`` -> ``sm_90``."""
    return f"sm_{compute_capability[0]}{compute_capability[1]}"


def _problem(d: Diagnostic, spliced: Spliced, path: str, code_lines: list[str]) -> CompileProblem:
    message = f"{d.severity}: {d.message}"
    if d.line is None or d.path is None or d.path != path:
        where = f" (in {d.path})" if d.path and d.path != path else ""
        return CompileProblem(message + where)
    line = spliced.code_line(d.line)
    file_lines = spliced.text.splitlines()
    source = file_lines[d.line - 1] if 1 <= d.line <= len(file_lines) else None
    if line is not None and 1 <= line <= len(code_lines):
        source = code_lines[line - 1]
    return CompileProblem(message, line, d.line, source)


def problems_of(result: CheckResult, spliced: Spliced, path: str,
                code: str) -> tuple[CompileProblem, ...]:
    """The errors of a compile check, mapped to the candidate (at most ``MAX_ERRORS``)."""
    lines = code.splitlines()
    return tuple(_problem(d, spliced, path, lines) for d in result.errors[:MAX_ERRORS])


@dataclass(frozen=True)
class Precheck:
    """The pre-check's outcome: errors (none when it compiled) and, when it compiled, what
    ptxas reported for the kernel."""

    problems: tuple[CompileProblem, ...]
    resources: Optional[KernelResources] = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def resources_text(self) -> str:
        r = self.resources
        if r is None:
            return "ptxas reported no resource usage for the kernel"
        spills = (f", spills {r.spill_store_bytes} B stored / {r.spill_load_bytes} B loaded"
                  if r.spills else ", no spills")
        return (f"{r.registers} registers/thread, {r.shared_bytes} B static shared memory/block, "
                f"{r.stack_bytes} B stack/thread{spills} ({r.arch})")


def _kernel_resources(result: CheckResult, kernel_name: str) -> Optional[KernelResources]:
    for k in result.kernels:
        if k.name.split("<")[0].split("::")[-1] == kernel_name:
            return k
    return None


def precheck(spliced: Spliced, code: str, path: str, arch: str, kernel_name: str = "",
             timeout_s: float = 120) -> Optional[Precheck]:
    """``spliced.text`` compiled as ``path`` (so its relative includes resolve) for ``arch``:
    errors mapped to ``code``'s lines, or the kernel's resources when it compiles. None when
    nvcc is unavailable (the pre-check is skipped)."""
    try:
        result = compile_check(path, spliced.text, arch=arch, timeout=timeout_s, lineinfo=False)
    except NvccNotFound:
        return None
    except NvccTimeout:
        return Precheck((CompileProblem(f"error: nvcc did not finish within {timeout_s:g} s"),))
    if not result.ok:
        return Precheck(problems_of(result, spliced, path, code))
    return Precheck((), _kernel_resources(result, kernel_name))


def map_compiler_log(log: str, spliced: Spliced, code: str) -> list[CompileProblem]:
    """Errors of a raw compiler log (the runner's) mapped to the candidate's lines.

    Lines of the form ``FILE(LINE): error: MESSAGE`` are taken (any file name: the runner
    compiles a copy in a temporary folder); without any, the log's first line is the message.
    """
    lines = code.splitlines()
    found: list[CompileProblem] = []
    for raw in log.splitlines():
        m = _LOG_LINE.match(raw.strip())
        if not m or "error" not in m.group("msg").lower():
            continue
        file_line = int(m.group("line"))
        line = spliced.code_line(file_line)
        source = lines[line - 1] if line is not None and 1 <= line <= len(lines) else None
        found.append(CompileProblem(m.group("msg").strip(), line, file_line, source))
        if len(found) >= MAX_ERRORS:
            break
    if not found and log.strip():
        found.append(CompileProblem(log.strip().splitlines()[0][:300]))
    return found
