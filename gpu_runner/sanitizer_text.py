"""compute-sanitizer's findings as data: ``Finding``, and the one parser of its text report.

compute-sanitizer (CUDA 11.x to 13) prints each finding as a *record*: a first line
``========= <what happened>`` followed by lines indented under the same prefix
(``=========     at <where>``, ``=========     by thread (x,y,z) in block (x,y,z)``,
``=========     Address ... is out of bounds``, then the host backtrace), and ends with
``========= ERROR SUMMARY: N errors`` (racecheck: ``RACECHECK SUMMARY``). Device locations
come in two spellings, both parsed here:

* ``at saxpy(int, float *)+0x70 in /tmp/x/kernel.cu:7`` (2023.2 and later), and
* ``at 0x70 in /tmp/x/kernel.cu:7:saxpy(int, float *)`` (2022.x to 2023.1);

a location has a file and line only when the code was built with ``-lineinfo`` (otherwise
``in saxpy(...)`` alone: the finding keeps line 0). Records of the same tool, kind and line
are merged into one ``Finding`` whose ``count`` says how many there were (racecheck's
``[N hazards]`` counted as N). Only this module reads compute-sanitizer's prose: its XML
output (``--save`` with ``--xml``) has no documented schema to test against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")

# ``Finding.kind``: what went wrong, as words the editor shows.
RACE = "race"
OOB_READ, OOB_WRITE = "out-of-bounds read", "out-of-bounds write"
INVALID_READ, INVALID_WRITE = "invalid read", "invalid write"
MISALIGNED = "misaligned access"
UNINITIALIZED = "uninitialized read"
BARRIER = "barrier error"
DEVICE_EXCEPTION = "device exception"
API_ERROR = "CUDA API error"
LEAK = "leak"
OTHER = "other"
# Kinds that make a kernel unusable as a reference: its output depends on timing or on memory
# it does not own. (API errors and leaks come from the host side, the launch script's.)
BLOCKING = frozenset({RACE, OOB_READ, OOB_WRITE, INVALID_READ, INVALID_WRITE, MISALIGNED,
                      UNINITIALIZED, BARRIER, DEVICE_EXCEPTION})

_PREFIX = "========="
_NEW_LOC = re.compile(r"\bat (?P<func>.+?)\+0x[0-9a-fA-F]+ in (?P<file>\S+?):(?P<line>\d+)\b")
_OLD_LOC = re.compile(r"\bat 0x[0-9a-fA-F]+ in (?P<file>[^\s:]+):(?P<line>\d+):(?P<func>.+)")
_NO_LINE = re.compile(r"\bat (?:0x[0-9a-fA-F]+ in )?(?P<func>[^\s][^\n]*?)(?:\+0x[0-9a-fA-F]+)?$")
_THREAD = re.compile(r"\bthread \((\d+),(\d+),(\d+)\)", re.I)
_BLOCK = re.compile(r"\bblock \((\d+),(\d+),(\d+)\)", re.I)
_HAZARDS = re.compile(r"\[(\d+) hazards?\]")
_LOC_WORDS = re.compile(r" at (?:\S.*?\+0x[0-9a-fA-F]+|0x[0-9a-fA-F]+) in \S+?(?::\d+)(?::\S.*?\))?"
                        r"(?=$| and| \[)")
_SUMMARY = re.compile(r"^(ERROR|RACECHECK|LEAK) SUMMARY\b")


@dataclass(frozen=True)
class Finding:
    """One problem compute-sanitizer reported in a kernel.

    ``tool``: one of ``TOOLS``; ``kind``: a kind above (``race``, ``out-of-bounds read``,
    ...); ``message``: compute-sanitizer's first line of the record, as it printed it;
    ``file``/``line``: the source location (1-based line; ``""``/0 when the record has none);
    ``function``: the device function named there; ``thread``/``block``: the first
    reporting thread's coordinates where the record gives them; ``count``: records (races:
    hazards) merged into this one; ``detail``: the record's other lines that describe it
    (address, allocation, the second access of a race); ``own``: the location is in the
    sanitized variant's own source (set by ``gpu_runner.sanitize``), so ``line`` is a line of
    that source."""

    tool: str
    kind: str
    message: str
    file: str = ""
    line: int = 0
    function: str = ""
    thread: Optional[tuple[int, int, int]] = None
    block: Optional[tuple[int, int, int]] = None
    count: int = 1
    detail: tuple[str, ...] = ()
    own: bool = False

    @property
    def summary(self) -> str:
        """One line for people: the kind, compute-sanitizer's words without code addresses,
        the other access of a race, the thread and block, the count."""
        words = _LOC_WORDS.sub("", self.message).strip()
        other = next((_LOC_WORDS.sub("", d).strip() for d in self.detail
                      if d.startswith("and ") and " access" in d), "")
        other = _HAZARDS.sub("", other).strip()
        where = ""
        if self.thread and self.block:
            where = f" (thread ({','.join(map(str, self.thread))}), block " \
                    f"({','.join(map(str, self.block))}))"
        times = f"; {self.count} hazards" if self.kind == RACE and self.count > 1 else \
            f"; {self.count} times" if self.count > 1 else ""
        return f"{self.kind}: {words}{' ' + other if other else ''}{where}{times}"

    @property
    def blocking(self) -> bool:
        """Whether this finding disqualifies the kernel as a reference (``BLOCKING``)."""
        return self.kind in BLOCKING


def _kind(tool: str, head: str, body: list[str]) -> str:
    low = head.lower()
    text = " ".join([head] + body).lower()
    if tool == "racecheck" or "race reported" in low or "hazard" in low:
        return RACE
    if "uninitialized" in low:
        return UNINITIALIZED
    if "barrier" in low or tool == "synccheck":
        return BARRIER
    if "misaligned" in text:
        return MISALIGNED
    if low.startswith("invalid") and (" read" in low or " write" in low):
        write = " write" in low
        if "out of bounds" in text:
            return OOB_WRITE if write else OOB_READ
        return INVALID_WRITE if write else INVALID_READ
    if "on cuda api call" in low or low.startswith("program hit"):
        return API_ERROR
    if low.startswith("leaked"):
        return LEAK
    if any(w in low for w in ("exception", "illegal", "trap", "assert", "out of range")):
        return DEVICE_EXCEPTION
    return OTHER


def _location(lines: list[str]) -> tuple[str, int, str]:
    """(file, line, function) from the first device location among ``lines``."""
    for text in lines:
        if "Host Frame" in text:
            break
        for pattern in (_NEW_LOC, _OLD_LOC):
            m = pattern.search(text)
            if m:
                return m["file"], int(m["line"]), m["func"].strip()
    for text in lines:
        if "Host Frame" in text:
            break
        stripped = text.strip()
        if stripped.startswith("at "):
            m = _NO_LINE.search(stripped)
            if m:
                return "", 0, m["func"].strip()
    return "", 0, ""


def _coords(pattern: re.Pattern, lines: list[str]) -> Optional[tuple[int, int, int]]:
    for text in lines:
        m = pattern.search(text)
        if m:
            return int(m[1]), int(m[2]), int(m[3])
    return None


def _records(text: str) -> list[tuple[str, list[str]]]:
    """(first line, indented lines up to the host backtrace) of each record."""
    out: list[tuple[str, list[str]]] = []
    in_backtrace = False
    for raw in text.splitlines():
        if not raw.startswith(_PREFIX):
            continue
        rest = raw[len(_PREFIX):]
        if not rest.strip():
            continue
        if rest.startswith("  "):  # an indented line: part of the current record
            if out and not in_backtrace:
                stripped = rest.strip()
                if stripped.startswith(("Saved host backtrace", "Host Frame")):
                    in_backtrace = True
                else:
                    out[-1][1].append(stripped)
            continue
        head = rest.strip()
        in_backtrace = False
        if head.startswith("COMPUTE-SANITIZER") or _SUMMARY.match(head) or \
                head.startswith(("Target application returned", "Error: process didn't",
                                 "No ", "Warning: Device")):
            continue
        out.append((head, []))
    return out


def parse_findings(tool: str, text: str) -> list[Finding]:
    """The findings in compute-sanitizer's text report ``text`` of ``tool`` (stdout and
    stderr together are fine: lines without the ``=========`` prefix are skipped), merged by
    (kind, file, line, function), in the order first seen.

    Raises:
        ValueError: ``tool`` is not one of ``TOOLS``.
    """
    if tool not in TOOLS:
        raise ValueError(f"unknown compute-sanitizer tool {tool!r}; expected one of {TOOLS}")
    merged: dict[tuple, Finding] = {}
    for head, body in _records(text):
        lines = [head] + body
        kind = _kind(tool, head, body)
        file, line, function = _location(lines)
        hazards = next((int(m[1]) for m in map(_HAZARDS.search, lines) if m), 1)
        finding = Finding(tool=tool, kind=kind, message=re.sub(r"^(Error|Warning): ", "", head),
                          file=file, line=line, function=function,
                          thread=_coords(_THREAD, lines), block=_coords(_BLOCK, lines),
                          count=hazards, detail=tuple(b for b in body if not b.startswith(
                              ("at ", "by thread"))))
        key = (kind, file, line, function)
        if key in merged:
            merged[key] = replace(merged[key], count=merged[key].count + finding.count)
        else:
            merged[key] = finding
    return list(merged.values())


def error_summary(text: str) -> Optional[int]:
    """The N of ``ERROR SUMMARY: N errors`` in ``text`` (None when it has no summary)."""
    m = re.search(rf"^{_PREFIX} ERROR SUMMARY: (\d+) errors?", text, re.M)
    return int(m[1]) if m else None
