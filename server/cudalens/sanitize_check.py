"""compute-sanitizer on an original kernel, for ``cudalens check --gpu``, for the check before
optimizing (CLI and language server) and for the editor's "Check this kernel" action.

``sanitize_target`` builds the runner's problem and the original's variant from the target's
spec (as ``cudalens.optimize`` does: the variant's source is the file's text, so a finding's
line in it is the file's line) and asks the runner (``RunnerClient.sanitize``). ``Located``
places each finding in the file: 0-based line and column (the column of the line's first
non-blank character), ``None`` for findings outside the file (a header, or no line info).

``check_original`` is the check before optimizing: an original with a blocking finding (a race,
an invalid or out-of-bounds access, an uninitialized read, a barrier error; see
``gpu_runner.sanitizer_text.BLOCKING``) raises ``OriginalUnsafe`` naming the finding and its
line; where no report can be made (no compute-sanitizer on the runner, a runner without the
endpoint, a timeout) it says so through ``progress`` (a message starting ``note: ``) and lets
the run go on; a client without ``sanitize`` (a replayed runner) is not checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from cudalens.errors import CudalensError
from cudalens.spec.errors import SpecError
from cudalens.target import Target
from gpu_runner.sanitize import SanitizeReport
from gpu_runner.sanitizer_text import Finding

DISABLE_HINT = "--no-sanitize"


class OriginalUnsafe(CudalensError):
    """The original kernel has a blocking finding: it is not used as a reference.
    ``findings``: the blocking ones, located."""

    def __init__(self, message: str, findings: tuple["Located", ...]):
        super().__init__(message)
        self.findings = findings


class CheckUnavailable(CudalensError):
    """No sanitizer report could be made; ``kind`` is the runner's code (``no_gpu``,
    ``sanitizer_missing``, ``timeout``, ``variant_failed``, ``failed``) or ``unsupported``
    (the runner or client has no sanitizer endpoint)."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Located:
    """A finding and where it is in the target's file: ``line``/``column`` 0-based, None
    when the finding is not in the file."""

    finding: Finding
    line: Optional[int]
    column: Optional[int]

    def position(self, path: str) -> str:
        """``FILE:LINE:COL`` (1-based), or ``FILE`` when not in the file."""
        if self.line is None:
            return path
        return f"{path}:{self.line + 1}:{(self.column or 0) + 1}"


def locate(text: str, finding: Finding) -> Located:
    """``finding`` placed in the file whose text is ``text`` (the variant's source)."""
    lines = [ln.rstrip("\r") for ln in text.split("\n")]  # as the compiler counts lines
    if not finding.own or not 1 <= finding.line <= len(lines):
        return Located(finding, None, None)
    body = lines[finding.line - 1]
    return Located(finding, finding.line - 1, len(body) - len(body.lstrip()))


def sanitize_target(target: Target, client: Any, *, tools: Optional[Sequence[str]] = None,
                    timeout_s: float = 120.0) -> tuple[SanitizeReport, tuple[Located, ...]]:
    """The runner's sanitizer report of ``target``'s kernel as written, and its findings
    located in the file.

    Raises:
        CudalensError: the spec cannot be resolved (its message names the spec's line).
        CheckUnavailable: no report (the runner's reason; ``unsupported`` when ``client``
            has no ``sanitize``).
        RunnerUnavailable, RunnerError: as ``RunnerClient.sanitize``.
    """
    from cudalens.spec.resolve import build_problem, build_variant  # noqa: PLC0415

    sanitize = getattr(client, "sanitize", None)
    if not callable(sanitize):
        raise CheckUnavailable("this runner connection cannot run compute-sanitizer",
                               "unsupported")
    try:
        problem = build_problem(target.spec, target.kernel)
        variant = build_variant("original", target.text, target.kernel.qualified_name,
                                target.spec, target.spec.launch,
                                client.device_info().sm_count)
    except SpecError as exc:
        raise CudalensError(str(exc)) from None
    answer = sanitize(problem, variant, tools=tools, timeout_s=timeout_s)
    if answer.report is None:
        raise CheckUnavailable(f"compute-sanitizer could not check {target.kernel.name}: "
                               f"{answer.reason}", answer.kind)
    return answer.report, tuple(locate(target.text, f) for f in answer.report.findings)


def finding_line(path: str, located: Located) -> str:
    """``FILE:LINE:COL: error: TOOL: SUMMARY`` (``warning`` for a finding that does not
    block, e.g. a CUDA API error of the launch script)."""
    f = located.finding
    level = "error" if f.blocking else "warning"
    outside = "" if located.line is not None or not f.file else f" (at {f.file}:{f.line})"
    return f"{located.position(path)}: {level}: {f.tool}: {f.summary}{outside}"


def check_original(target: Target, client: Any,
                   progress: Optional[Callable[[str], None]] = None) -> tuple[Located, ...]:
    """The check before optimizing (module doc): the located findings when none blocks.

    Raises:
        OriginalUnsafe: a blocking finding; the message names each (at most 3) and its line.
        CudalensError: the spec cannot be resolved.
    """
    say = progress or (lambda _m: None)
    from cudalens.runner_client import RunnerError  # noqa: PLC0415

    if not callable(getattr(client, "sanitize", None)):
        return ()  # a client without the tool (a replayed runner): nothing to say
    say(f"checking the original {target.kernel.name} with compute-sanitizer")
    try:
        report, located = sanitize_target(target, client)
    except (CheckUnavailable, RunnerError) as exc:
        say(f"note: the original was not checked for races and memory errors: {exc}")
        return ()
    del report
    blocking = tuple(loc for loc in located if loc.finding.blocking)
    if not blocking:
        return located
    path = str(target.path)
    shown = "; ".join(finding_line(path, loc) for loc in blocking[:3])
    more = f" (and {len(blocking) - 3} more)" if len(blocking) > 3 else ""
    raise OriginalUnsafe(
        f"the original {target.kernel.name} is not used as a reference: compute-sanitizer "
        f"found {len(blocking)} problem(s) that make its output depend on timing or on memory "
        f"it does not own: {shown}{more}. Fix them, or skip this check with {DISABLE_HINT} "
        f"(the editor: the cudalens.sanitize setting)", blocking)
