"""What the compute-sanitizer check before optimizing found, as an optimize run keeps it.

A run's record (``cudalens optimize --json``, the language server's stored run) says one of:

- ``clean``: compute-sanitizer ran on the original (``reason`` says on what: the case, its
  sizes and each tool's seconds) and found nothing;
- ``findings``: it ran and found problems that do not block a run (a CUDA API error of the
  launch, say; a blocking finding stops the run before anything is recorded), each with its
  line in the kernel's file;
- ``not_run``: it did not run, and ``reason`` says why (``--no-sanitize``, ``--capture-only``,
  the runner has no compute-sanitizer, a replayed runner, the editor's setting).

``to_dict``/``from_dict`` give the JSON form ``{"state", "reason", "findings": [{"tool",
"kind", "summary", "blocking", "line", "column", "where"}]}`` (``line``/``column`` 1-based in
the kernel's file, null for a finding outside it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, Optional

State = Literal["clean", "findings", "not_run"]
STATES: tuple[str, ...] = ("clean", "findings", "not_run")


@dataclass(frozen=True)
class SanitizerFinding:
    """One finding: ``tool`` (memcheck, racecheck, initcheck, synccheck), ``kind`` (``race``,
    ``out-of-bounds read``...), ``summary`` (one line), ``blocking`` (it would make the
    original unusable as a reference), ``line``/``column`` (1-based in the kernel's file;
    None outside it) and ``where`` (``FILE:LINE:COL``, or the finding's own file:line)."""

    tool: str
    kind: str
    summary: str
    blocking: bool
    line: Optional[int]
    column: Optional[int]
    where: str


@dataclass(frozen=True)
class SanitizerStatus:
    """The check's outcome (module doc)."""

    state: State
    reason: str = ""
    findings: tuple[SanitizerFinding, ...] = ()

    @property
    def words(self) -> str:
        """``clean (the ragged case at n=262145 ...)``, ``2 finding(s)`` or ``not run:
        WHY``."""
        if self.state == "not_run":
            return f"not run: {self.reason}"
        if self.state == "clean":
            return f"clean ({self.reason})" if self.reason else "clean"
        return f"{len(self.findings)} finding(s)" + (f" ({self.reason})" if self.reason else "")

    def to_dict(self) -> dict:
        return {"state": self.state, "reason": self.reason,
                "findings": [asdict(f) for f in self.findings]}


def not_run(reason: str) -> SanitizerStatus:
    return SanitizerStatus("not_run", reason)


def from_located(path: str, located, where: str) -> SanitizerStatus:
    """The status of a finished check: ``located`` (``cudalens.sanitize_check.Located``) in
    the file ``path``, ``where`` what ran (``SanitizeRun.where()``)."""
    findings = tuple(
        SanitizerFinding(tool=loc.finding.tool, kind=loc.finding.kind,
                         summary=loc.finding.summary, blocking=loc.finding.blocking,
                         line=None if loc.line is None else loc.line + 1,
                         column=None if loc.line is None else (loc.column or 0) + 1,
                         where=loc.position(path) if loc.line is not None else
                         (f"{loc.finding.file}:{loc.finding.line}" if loc.finding.file
                          else path))
        for loc in located)
    return SanitizerStatus("findings" if findings else "clean", where, findings)


def from_dict(data: Any, where: str = "sanitizer") -> SanitizerStatus:
    """The status of its JSON form.

    Raises:
        ValueError: ``data`` is not that form (the message says what was expected and
            found, at ``where``)."""
    if not isinstance(data, dict) or data.get("state") not in STATES:
        raise ValueError(f"{where}: expected an object with 'state' one of {', '.join(STATES)}, "
                         f"found {data!r}")
    findings = []
    for i, f in enumerate(data.get("findings") or []):
        try:
            findings.append(SanitizerFinding(
                tool=str(f["tool"]), kind=str(f["kind"]), summary=str(f["summary"]),
                blocking=bool(f["blocking"]),
                line=None if f.get("line") is None else int(f["line"]),
                column=None if f.get("column") is None else int(f["column"]),
                where=str(f.get("where", ""))))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where}: finding {i + 1}: expected tool, kind, summary, "
                             f"blocking, line, column, where; found {f!r} ({exc})") from None
    return SanitizerStatus(data["state"], str(data.get("reason", "")), tuple(findings))
