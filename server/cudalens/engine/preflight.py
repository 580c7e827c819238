"""The cheap checks before any runner is asked: the kernel's build can be read and its file
compiles. One place for both front ends (``cli.py`` before it starts the GPU runner,
``lsp/jobs.py`` before it asks the runner factory), so that a bad ``[build]`` table, an
unreadable ``compile_commands.json``, a header the runner would refuse, or a syntax error is
told at its ``FILE:LINE`` at once, not after a runner was started (or found missing).

``preflight(target, nvcc=, arch=, options=, compiled=)`` -> ``Ready``, or raises ``NotReady``
(a ``CudalensError`` whose message names the file and line). The compile uses the local nvcc
(``cudalens.check.compile_check`` on the target's text, with the build's flags); where there is
no nvcc here (or it does not finish in time) nothing is refused and ``Ready.compiled`` is None
with the reason in ``Ready.note``: the runner compiles the kernel anyway and reports its
errors. Only an error located in the file (or a header it includes) refuses: an nvcc that
fails here without naming a line (no host compiler, a broken install) refuses nothing. ``compiled``: a check of this very text already made (the editor's diagnostics), used
instead of compiling again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from cudalens.build import RequestFiles, build_for, local_nvcc_options, request_files
from cudalens.check import CheckError, CheckResult, compile_check
from cudalens.check.report import Diagnostic
from cudalens.errors import CudalensError

__all__ = ["NotReady", "Ready", "preflight", "does_not_compile", "first_error", "refuses"]

DEFAULT_ARCH = "sm_90"


class NotReady(CudalensError):
    """The target cannot be sent to a runner: its build cannot be read, or its file does not
    compile (``line``: the first error's 1-based line, when known)."""

    def __init__(self, message: str, line: Optional[int] = None):
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Ready:
    """What the checks found: the request's ``build`` (headers and options); ``compiled``: the
    local compile check (None where none ran, ``note`` says why)."""

    build: RequestFiles
    compiled: Optional[CheckResult]
    note: str = ""


def first_error(result: CheckResult) -> Optional[Diagnostic]:
    """The first error of ``result`` (a located one before one without a file), if any."""
    errors = [d for d in result.diagnostics if d.severity == "error"]
    located = [d for d in errors if d.path is not None and d.line is not None]
    return (located or errors or [None])[0]


def refuses(result: Optional[CheckResult]) -> bool:
    """Whether a compile check refuses the file: it failed with an error located in the file
    or a header it includes (an nvcc that fails without naming a line refuses nothing)."""
    if result is None or result.ok:
        return False
    first = first_error(result)
    return first is not None and first.path is not None and first.line is not None


def does_not_compile(path: str, result: CheckResult) -> str:
    """The words for a file whose compile check failed: ``FILE:LINE: MESSAGE (FILE does not
    compile with nvcc for ARCH: N errors; cudalens check FILE shows them all)``."""
    first = first_error(result)
    count = len(result.errors)
    total = f"{count} error{'s' if count != 1 else ''}"
    tail = (f"{path} does not compile with nvcc for {result.arch}: {total}; "
            f"cudalens check {path} shows them all")
    if first is None:
        return f"{path}: {tail}"
    message = first.message.split("\n", 1)[0]
    where = first.path if first.path is not None else first.tool
    if first.path is not None and first.line is not None:
        where = f"{first.path}:{first.line}"
    return f"{where}: {message} ({tail})"


def preflight(target, *, nvcc: str = "nvcc", arch: str = DEFAULT_ARCH,
              options: Sequence[str] = (), compiled: Optional[CheckResult] = None,
              compile: bool = True, timeout: float = 120) -> Ready:
    """Checks ``target`` (a ``cudalens.target.Target``) before any runner is asked.

    nvcc, arch, options: the local compile (``options`` after the build's flags);
    compiled: a check of ``target.text`` made already (then nothing is compiled here);
    compile: False skips the compile (the build is still read).

    Raises:
        NotReady: the build cannot be read (a refused ``[build]`` table, an unreadable
            compilation database, a header the runner would refuse) or the file does not
            compile; the message names the file (and line).
    """
    try:
        build = request_files(target.path, target.text, build_for(target.path))
        flags = local_nvcc_options(target.path)
    except CudalensError as exc:
        raise NotReady(str(exc)) from None
    if compiled is None and compile:
        try:
            compiled = compile_check(str(target.path), target.text, arch=arch,
                                     options=(*flags, *options), nvcc=nvcc, timeout=timeout)
        except CheckError as exc:  # no nvcc here, or it did not finish: the runner compiles
            return Ready(build, None, f"not compiled here: {exc}")
        except ValueError as exc:  # an option the check cannot pass
            return Ready(build, None, f"not compiled here: {exc}")
    if compiled is not None and not compiled.ok:
        first = first_error(compiled)
        if not refuses(compiled):
            # nvcc itself failed here (no host compiler, a broken install): nothing is known
            # of the file, so the runner, whose nvcc may work, is left to compile it
            said = first.message.split("\n", 1)[0] if first is not None else \
                f"status {compiled.returncode}"
            return Ready(build, None, f"not compiled here: nvcc failed without naming a line "
                                      f"of the file ({said})")
        raise NotReady(does_not_compile(str(target.path), compiled), first.line)
    return Ready(build, compiled, "" if compiled is not None else "not compiled here")
