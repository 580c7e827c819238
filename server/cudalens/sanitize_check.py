"""compute-sanitizer on an original kernel, for ``cudalens check --gpu``, for the check before
optimizing (CLI and language server) and for the editor's "Check this kernel" action.

``sanitize_target`` builds the runner's problem and the original's variant from the target's
spec (as ``cudalens.optimize`` does: the variant's source is the file's text, so a finding's
line in it is the file's line) and asks the runner (``RunnerClient.sanitize``). ``Located``
places each finding in the file: 0-based line and column (the column of the line's first
non-blank character), ``None`` for findings outside the file (a header, or no line info).

``check_original_status`` (``check_original``: its findings alone) is the check before optimizing: an original with a blocking finding (a race,
an invalid or out-of-bounds access, an uninitialized read, a barrier error; see
``gpu_runner.sanitizer_text.BLOCKING``) raises ``OriginalUnsafe`` naming the finding and its
line; where no report can be made (no compute-sanitizer on the runner, a runner without the
endpoint, a timeout) it says so through ``note`` (a message starting ``note: ``) and lets
the run go on; a runner that cannot sanitize (``Runner.can_sanitize``: the model or a replay)
is not checked. Its ``SanitizerStatus`` goes into the run's record, so a report can tell a
clean original from one that was not checked.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from cudalens.errors import CudalensError
from cudalens.sanitizer_status import SanitizerStatus, from_located, not_run
from cudalens.spec.errors import SpecError
from cudalens.spec.model import CheckDecl, KernelSpec
from cudalens.target import Target
from gpu_runner.sanitize import SanitizeReport
from gpu_runner.sanitizer_text import Finding

if TYPE_CHECKING:
    from cudalens.engine.runner import Runner

DISABLE_HINT = "--no-sanitize"
# The sanitizer runs the ragged case with its literal sizes scaled down so that their product is
# at most about this many: racecheck and memcheck slow a kernel down by orders of magnitude.
SANITIZE_ELEMENTS = 1 << 18


class OriginalUnsafe(CudalensError):
    """The original kernel has a blocking finding: it is not used as a reference.
    ``findings``: the blocking ones, located."""

    def __init__(self, message: str, findings: tuple["Located", ...]):
        super().__init__(message)
        self.findings = findings


class CheckUnavailable(CudalensError):
    """No sanitizer report could be made; ``kind`` is the runner's code (``no_gpu``,
    ``sanitizer_missing``, ``timeout``, ``variant_failed``, ``failed``) or ``unsupported``
    (the runner cannot sanitize: ``Runner.can_sanitize`` is False)."""

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


@dataclass(frozen=True)
class SanitizeRun:
    """A finished check: the runner's ``report``, its findings located in the file
    (``found``), and the sizes of the case it ran (``small_spec``'s ragged sizes)."""

    report: SanitizeReport
    found: tuple[Located, ...]
    sizes: dict[str, int]

    def where(self) -> str:
        """``the ragged case at n=262145 (memcheck 2.1 s, racecheck 3.4 s, ...)``."""
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        tools = ", ".join(f"{run.tool} {run.seconds:.1f} s" for run in self.report.runs)
        return f"the {self.report.case} case{' at ' + sizes if sizes else ''} ({tools})"


def locate(text: str, finding: Finding) -> Located:
    """``finding`` placed in the file whose text is ``text`` (the variant's source)."""
    lines = [ln.rstrip("\r") for ln in text.split("\n")]  # as the compiler counts lines
    if not finding.own or not 1 <= finding.line <= len(lines):
        return Located(finding, None, None)
    body = lines[finding.line - 1]
    return Located(finding, finding.line - 1, len(body) - len(body.lstrip()))


def small_spec(spec: KernelSpec, elements: int = SANITIZE_ELEMENTS) -> KernelSpec:
    """``spec`` with ``check`` values that make its ragged case small: each literal size (one
    whose expression names no other size) becomes the smaller of its ragged value and an odd
    cap, the k-th root of ``elements`` for k literal sizes (at least 33), so the sizes stay
    ragged (not multiples of a block) and their product is at most about ``elements``.
    Raises ``SpecError`` as ``resolve.sizes_for``."""
    from cudalens.spec.expr import names_in  # noqa: PLC0415
    from cudalens.spec.resolve import sizes_for  # noqa: PLC0415

    ragged = sizes_for(spec, "ragged")
    literal = [s for s in spec.sizes if not names_in(s.expr)]
    if not literal:
        return spec
    cap = max(33, int(round(elements ** (1.0 / len(literal))))) | 1
    old = {c.name: c for c in spec.checks}
    checks = [c for c in spec.checks if c.name not in {s.name for s in literal}]
    for s in literal:
        line = old[s.name].line if s.name in old else s.line
        checks.append(CheckDecl(s.name, str(min(ragged[s.name], cap)), line))
    return dataclasses.replace(spec, checks=tuple(checks))


def sanitize_target(target: Target, client: "Runner", *, tools: Optional[Sequence[str]] = None,
                    timeout_s: float = 120.0) -> SanitizeRun:
    """The runner's sanitizer report of ``target``'s kernel as written, on the ragged case of
    ``small_spec(target.spec)``, and its findings located in the file.

    Raises:
        CudalensError: the spec cannot be resolved (its message names the spec's line), the
            build cannot be read or its project headers cannot be sent (``cudalens.build``).
        CheckUnavailable: no report (the runner's reason; ``unsupported`` when ``client``
            cannot sanitize: ``Runner.can_sanitize``).
        RunnerUnavailable, RunnerError: as ``RunnerClient.sanitize``.
    """
    from cudalens.spec.resolve import build_problem, build_variant, sizes_for  # noqa: PLC0415

    if not client.can_sanitize:
        raise CheckUnavailable("this runner connection cannot run compute-sanitizer",
                               "unsupported")
    from cudalens.build import build_for, request_files  # noqa: PLC0415

    build = request_files(target.path, target.text, build_for(target.path))
    try:
        spec = small_spec(target.spec)
        problem = build_problem(spec, target.kernel)
        variant = build_variant("original", target.text, target.kernel.qualified_name,
                                spec, spec.launch, client.device_info().sm_count,
                                options=build.options, files=build.files,
                                source_path=build.source_path)
        sizes = sizes_for(spec, "ragged")
    except SpecError as exc:
        raise CudalensError(str(exc)) from None
    answer = client.sanitize(problem, variant, tools=tools, timeout_s=timeout_s)
    if answer.report is None:
        raise CheckUnavailable(f"compute-sanitizer could not check {target.kernel.name}: "
                               f"{answer.reason}", answer.kind)
    return SanitizeRun(answer.report,
                       tuple(locate(target.text, f) for f in answer.report.findings), sizes)


def finding_line(path: str, located: Located) -> str:
    """``FILE:LINE:COL: error: TOOL: SUMMARY`` (``warning`` for a finding that does not
    block, e.g. a CUDA API error of the launch script)."""
    f = located.finding
    level = "error" if f.blocking else "warning"
    outside = "" if located.line is not None or not f.file else f" (at {f.file}:{f.line})"
    return f"{located.position(path)}: {level}: {f.tool}: {f.summary}{outside}"


def check_original_status(target: Target, client: "Runner",
                          progress: Optional[Callable[[str], None]] = None,
                          note: Optional[Callable[[str], None]] = None
                          ) -> tuple[SanitizerStatus, tuple[Located, ...]]:
    """The check before optimizing (module doc): its status for the run's record
    (``cudalens.sanitizer_status``: clean, findings that do not block, or not run and why) and
    the located findings. ``progress`` gets what it is doing, ``note`` (default: ``progress``)
    the sentence saying the check could not be made (``note: the original was not checked
    ...``).

    Raises:
        OriginalUnsafe: a blocking finding; the message names each (at most 3) and its line.
        CudalensError: the spec cannot be resolved.
    """
    say = progress or (lambda _m: None)
    tell = note or say
    from cudalens.runner_client import RunnerError  # noqa: PLC0415

    if not client.can_sanitize:  # a client without the tool (a replayed runner)
        return not_run("this runner connection cannot run compute-sanitizer (a replayed or "
                       "recorded runner)"), ()
    say(f"checking the original {target.kernel.name} with compute-sanitizer")
    try:
        run = sanitize_target(target, client)
    except (CheckUnavailable, RunnerError) as exc:
        tell(f"note: the original was not checked for races and memory errors: {exc}")
        return not_run(str(exc)), ()
    located = run.found
    blocking = tuple(loc for loc in located if loc.finding.blocking)
    if not blocking:
        return from_located(str(target.path), located, run.where()), located
    path = str(target.path)
    shown = "; ".join(finding_line(path, loc) for loc in blocking[:3])
    more = f" (and {len(blocking) - 3} more)" if len(blocking) > 3 else ""
    raise OriginalUnsafe(
        f"the original {target.kernel.name} is not used as a reference: compute-sanitizer "
        f"found {len(blocking)} problem(s) that make its output depend on timing or on memory "
        f"it does not own: {shown}{more}. Fix them, or skip this check with {DISABLE_HINT} "
        f"(the editor: the cudalens.sanitize setting)", blocking)


def check_original(target: Target, client: "Runner",
                   progress: Optional[Callable[[str], None]] = None,
                   note: Optional[Callable[[str], None]] = None) -> tuple[Located, ...]:
    """``check_original_status``'s located findings alone (none when it did not run).

    Raises:
        OriginalUnsafe, CudalensError: as ``check_original_status``.
    """
    return check_original_status(target, client, progress, note)[1]
