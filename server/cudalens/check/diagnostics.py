"""Parse the messages nvcc prints into ``Diagnostic`` objects.

nvcc relays messages from several programs, each in its own format (as printed by CUDA
12.x-13.x with a gcc host compiler):

* the CUDA front end, cudafe++ (EDG)::

      err.cu(12): error: expected a ";"
      tmpl.cu(7): warning #177-D: variable "u" was declared but never referenced
            argument types are: (float *)          <- continuation of the message
        <the line, macro-expanded, indented by 2>
        <spaces>^                                  <- caret under the column
                detected during:
                  instantiation of "T twice(T) [with T=float]" at line 3 of inst.cu
      ov.cu(2): note #3322-D: ...                 <- note attached to the message above

  blocks end at a blank line; ``catastrophic error`` and ``remark`` use the same shape.
* the host preprocessor (gcc): ``file:line:col: warning: text [-Wflag]``, context lines
  ``  15 | ...`` and ``     |  ^~~``, ``In file included from a.cu:1:``, and
  ``cc1plus: fatal error: ...``.
* toolkit programs: ``nvcc fatal   : Unknown option '-x'``, ``ptxas error   : Entry
  function '_Z3bigPf' uses too much shared data (...)``, and ptxas errors located in the
  generated PTX: ``ptxas /tmp/x.ptx, line 54; error   : Unknown symbol '%bogus'``.

``ptxas info`` lines of the resource report are not diagnostics (see ``ptxas_report``);
other ``ptxas info`` lines become remarks.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gpu_runner.symbols import demangle

from cudalens.check.ptxas_report import display_name, is_report_line
from cudalens.check.report import Diagnostic, DiagnosticNote

ResolvePath = Callable[[str], str]
SourceLine = Callable[[str, int], "str | None"]
PtxLocation = Callable[[str, int], "tuple[str, int, int | None] | None"]

_EDG = re.compile(
    r"^(?P<path>.+?)\((?P<line>\d+)\): (?P<sev>catastrophic error|internal error|fatal error|"
    r"error|warning|remark|note)(?: #(?P<code>\d+(?:-[A-Z])?))?: (?P<msg>.*)$")
_GCC = re.compile(
    r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>fatal error|error|warning|"
    r"note|remark): (?P<msg>.*?)(?: \[(?P<code>-[WfR][^\]]*)\])?$")
_GCC_TOOL = re.compile(
    r"^(?P<tool>cc1plus|cc1|cpp|gcc|g\+\+|clang\+\+|clang|c\+\+): (?P<sev>fatal error|error|"
    r"warning|note): (?P<msg>.*)$")
_GCC_INCLUDED = re.compile(r"^(?:In file included|\s+) from (?P<path>[^:]+):(?P<line>\d+)(?::\d+)?[:,]$")
_GCC_CONTEXT = re.compile(r"^\s*\d*\s*\|")
_GCC_IN_FUNCTION = re.compile(r"^[^:]+: (?:In |At global scope)")
_NV_TOOL = re.compile(
    r"^(?P<tool>nvcc|ptxas|nvlink|fatbinary|cicc|cudafe\+\+|nvdisasm|nvptxcompiler)\s+"
    r"(?P<sev>fatal|error|warning|info)\s*: ?(?P<msg>.*)$")
_PTX_LOCATED = re.compile(
    r"^ptxas (?P<ptx>.+?), line (?P<line>\d+); (?P<sev>fatal|error|warning)\s*: ?(?P<msg>.*)$")
_CARET = re.compile(r"^ *\^\s*$")
_AT_LINE = re.compile(r"^(?P<msg>.*?) at line (?P<line>\d+)(?: of (?P<path>.+))?$")
_MANGLED = re.compile(r"'(_Z[A-Za-z0-9_$.]+)'")
_SKIP = re.compile(
    r"^(?:\d+ errors? detected in the compilation of |compilation terminated\.|"
    r"Compilation terminated\.|Error limit reached\.|"
    r"Remark: The warnings can be suppressed with )")
_PTXAS_ABORTED = re.compile(r"^ptxas fatal\s*: Ptx assembly aborted due to errors")

_SEVERITY = {
    "catastrophic error": "error", "internal error": "error", "fatal error": "error",
    "fatal": "error", "error": "error", "warning": "warning", "remark": "remark",
    "note": "note", "info": "remark",
}


@dataclass
class _Pending:
    diag: Diagnostic
    body: list[str] = field(default_factory=list)


def _identity(path: str) -> str:
    return path


def edg_column(printed: str, caret_index: int, real: str | None) -> int | None:
    """1-based column in ``real`` of the caret under the EDG context line ``printed``.

    EDG prints the line after macro expansion, indented by two spaces, with each tab shown
    as one space. The caret's column is trusted when the printed text before it matches
    the real line, or when the printed text from it to the end matches the real line's end;
    otherwise ``None``.
    """
    if real is None or not printed.startswith("  ") or caret_index < 2:
        return None
    shown = printed[2:].rstrip("\r\n")
    k = caret_index - 2
    flat = real.rstrip("\r\n").replace("\t", " ")
    if k <= len(flat) and flat[:k] == shown[:k] and len(shown) >= k:
        return k + 1
    tail = shown[k:].rstrip()
    if tail and flat.rstrip().endswith(tail):
        return len(flat.rstrip()) - len(tail) + 1
    return None


def gcc_column(display_column: int, real: str | None, tabstop: int = 8) -> int:
    """gcc counts columns in display cells (tabs to the next multiple of ``tabstop``; gcc's
    default ``-fdiagnostics-column-unit=display``, ``-ftabstop=8``): convert to 1-based
    characters of ``real``. Without the line, the column is returned unchanged.
    """
    if real is None or "\t" not in real:
        return display_column
    cells = 0
    for i, ch in enumerate(real):
        if cells + 1 >= display_column:
            return i + 1
        cells = (cells // tabstop + 1) * tabstop if ch == "\t" else cells + 1
    return display_column


def _demangle_names(message: str) -> tuple[str, str | None]:
    names = _MANGLED.findall(message)
    if not names:
        return message, None
    text = _MANGLED.sub(lambda m: "'" + demangle(m.group(1).split("$", 1)[0]) + "'", message)
    return text, display_name(names[0])


def parse_diagnostics(output: str, *, resolve_path: ResolvePath = _identity,
                      source_line: SourceLine | None = None,
                      ptx_location: PtxLocation | None = None) -> list[Diagnostic]:
    """Diagnostics in nvcc's combined output, in the order printed.

    resolve_path: maps a path as the compiler printed it to the path to report (the
        checked file's temporary copy to the caller's path).
    source_line: ``(reported path, 1-based line) -> text or None``, used to turn carets
        into columns; without it EDG columns are ``None``.
    ptx_location: ``(ptx path, ptx line) -> (path, line, column) or None`` for ptxas
        messages located in generated PTX (see ``ptx_lines``); reported path expected.
    Notes (EDG ``note``, gcc ``note:``, instantiation contexts, include chains) are
    attached to the message they follow.
    """
    line_of = source_line or (lambda _p, _n: None)
    out: list[Diagnostic] = []
    pending: _Pending | None = None
    includes: list[DiagnosticNote] = []
    ptxas_errors = 0

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            diag = _finish_edg(pending, resolve_path, line_of)
            if diag.severity != "note" or not attach(
                    DiagnosticNote(diag.message, diag.path, diag.line)):
                out.append(diag)
            pending = None

    def attach(note: DiagnosticNote) -> bool:
        if out and out[-1].severity != "note":
            out[-1] = replace(out[-1], notes=out[-1].notes + (note,))
            return True
        return False

    for raw in output.splitlines():
        line = raw.rstrip("\r")
        m = _EDG.match(line)
        if m:
            flush()
            path = resolve_path(m.group("path"))
            diag = Diagnostic(path=path, line=int(m.group("line")), column=None,
                              severity=_SEVERITY[m.group("sev")], message=m.group("msg"),
                              code=m.group("code"), tool="cudafe++")
            pending = _Pending(diag)
            continue
        if pending is not None:
            # Everything in an EDG block is indented; a blank or unindented line ends it.
            if line.strip() and line[0] in " \t":
                pending.body.append(line)
                continue
            flush()
        if not line.strip() or _SKIP.match(line):
            continue
        m = _GCC_INCLUDED.match(line)
        if m:
            includes.append(DiagnosticNote("included from here", resolve_path(m.group("path")),
                                           int(m.group("line"))))
            continue
        m = _GCC.match(line)
        if m:
            path = resolve_path(m.group("path"))
            number = int(m.group("line"))
            col = int(m.group("col")) if m.group("col") else None
            if col is not None:
                col = gcc_column(col, line_of(path, number))
            severity = _SEVERITY[m.group("sev")]
            if severity == "note" and attach(DiagnosticNote(m.group("msg"), path, number)):
                continue
            out.append(Diagnostic(path=path, line=number, column=col, severity=severity,
                                  message=m.group("msg"), code=m.group("code"),
                                  tool="host compiler", notes=tuple(includes)))
            includes = []
            continue
        if _GCC_CONTEXT.match(line) or _GCC_IN_FUNCTION.match(line):
            continue
        m = _GCC_TOOL.match(line)
        if m:
            out.append(Diagnostic(path=None, line=None, column=None,
                                  severity=_SEVERITY[m.group("sev")], message=m.group("msg"),
                                  tool="host compiler"))
            continue
        m = _PTX_LOCATED.match(line)
        if m:
            message, function = _demangle_names(m.group("msg"))
            where = ptx_location(m.group("ptx"), int(m.group("line"))) if ptx_location else None
            if where is None:
                message = f"{message} (generated PTX line {m.group('line')})"
                where = (None, None, None)
            severity = _SEVERITY[m.group("sev")]
            ptxas_errors += severity == "error"
            out.append(Diagnostic(path=where[0], line=where[1], column=where[2],
                                  severity=severity, message=message, tool="ptxas",
                                  function=function))
            continue
        if _PTXAS_ABORTED.match(line) and ptxas_errors:
            continue
        m = _NV_TOOL.match(line)
        if m:
            if m.group("tool") == "ptxas" and is_report_line(line):
                continue
            message, function = _demangle_names(m.group("msg").strip())
            severity = _SEVERITY[m.group("sev")]
            ptxas_errors += m.group("tool") == "ptxas" and severity == "error"
            out.append(Diagnostic(path=None, line=None, column=None, severity=severity,
                                  message=message, tool=m.group("tool"), function=function))
            continue
    flush()
    return out


def _finish_edg(p: _Pending, resolve_path: ResolvePath,
                line_of: Callable[[str, int], str | None]) -> Diagnostic:
    body = p.body
    caret = next((i for i, text in enumerate(body) if _CARET.match(text)), None)
    column = None
    if caret is not None and caret >= 1:
        continuation, after = body[:caret - 1], body[caret + 1:]
        column = edg_column(body[caret - 1], body[caret].index("^"),
                            line_of(p.diag.path, p.diag.line))
    else:
        split = next((i for i, t in enumerate(body) if t.strip().startswith("detected during")),
                     len(body))
        continuation, after = body[:split], body[split:]
    message = "\n".join([p.diag.message] + [t.strip() for t in continuation])
    notes = []
    for text in after:
        text = text.strip()
        for prefix in ("detected during:", "detected during"):
            if text.startswith(prefix):
                text = text[len(prefix):].strip()
                break
        if not text:
            continue
        m = _AT_LINE.match(text)
        if m:
            path = resolve_path(m.group("path").strip()) if m.group("path") else p.diag.path
            notes.append(DiagnosticNote(m.group("msg"), path, int(m.group("line"))))
        else:
            notes.append(DiagnosticNote(text))
    return replace(p.diag, message=message, column=column, notes=tuple(notes))
