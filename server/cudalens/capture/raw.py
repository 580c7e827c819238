"""What the recorder (``recorder.cpp``) wrote in its output directory, as typed values.

``k<PID>.<N>/meta.txt`` (record N of process PID) holds one record per line, a keyword and its fields separated by single
spaces::

    kernel MANGLED              demangled TEXT (rest of the line)
    launch_index N              api NAME
    grid X Y Z                  block X Y Z             shared BYTES
    param I OFFSET SIZE HEX     (parameter I's bytes, hex, in launch order)
    alloc J BASE SIZE           (device allocation J: start address and size in bytes)
    pointer I J OFFSET          (parameter I points OFFSET bytes into allocation J)
    total_bytes N               refused TOTAL LIMIT     error TEXT
    end                         (last line of a complete record)

Allocation J's bytes are in ``a<J>.before.bin`` and ``a<J>.after.bin``. ``launched.tsv`` lists
``MANGLED\\tDEMANGLED`` per distinct kernel in first-launch order, ``counts.<PID>.tsv``
``COUNT\\tMANGLED`` per kernel of each process (written at its exit; absent if it was
killed); counts of several processes are added. ``runtime_only.tsv`` lists
``MANGLED\\tDEMANGLED`` for runtime-API launches no driver launch callback fired inside.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional


class RawCaptureError(ValueError):
    """A recorder record that is incomplete or malformed (names the file and line)."""


@dataclass(frozen=True)
class RawParam:
    index: int
    offset: int
    data: bytes


@dataclass(frozen=True)
class RawPointer:
    param: int
    alloc: int
    offset: int  # bytes from the allocation's start


@dataclass(frozen=True)
class RawAlloc:
    index: int
    base: int
    size: int


@dataclass(frozen=True)
class RawLaunch:
    """One recorded launch. ``refused`` holds ``(total, limit)`` when the copy would have been
    over ``--max-bytes``; ``error`` is set when the recorder could not finish."""

    directory: Path
    mangled: str
    demangled: str
    launch_index: int
    api: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    params: tuple[RawParam, ...]
    allocs: tuple[RawAlloc, ...]
    pointers: tuple[RawPointer, ...]
    total_bytes: int = 0
    refused: Optional[tuple[int, int]] = None
    error: str = ""
    # "FUNC KERNEL": the CUresult codes of cuFuncGetParamInfo and cuKernelGetParamInfo when
    # neither could read the launched function's parameters (else "")
    param_info_errors: str = ""

    @property
    def base_name(self) -> str:
        """The demangled name without its parameter list."""
        depth = 0
        for i, c in enumerate(self.demangled):
            depth += (c == "<") - (c == ">")
            if c == "(" and depth == 0:
                return self.demangled[:i]
        return self.demangled

    def before(self, alloc: int) -> bytes:
        return (self.directory / f"a{alloc}.before.bin").read_bytes()

    def after(self, alloc: int) -> bytes:
        return (self.directory / f"a{alloc}.after.bin").read_bytes()


@dataclass(frozen=True)
class RecorderOutput:
    """Everything one run of the program left: recorded launches and the kernels launched
    (``launched``: demangled names in first-launch order; ``counts``: launches per mangled
    name, empty when the program did not exit normally)."""

    launches: tuple[RawLaunch, ...]
    launched: tuple[tuple[str, str], ...]
    counts: dict[str, int] = field(default_factory=dict)
    ready: bool = False
    errors: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    runtime_only: tuple[tuple[str, str], ...] = ()  # (mangled, demangled): never reached
    # the driver's launch functions, so never recorded


def _ints(fields: list[str], n: int, where: str) -> list[int]:
    if len(fields) != n:
        raise RawCaptureError(f"{where}: expected {n} numbers, found {len(fields)}")
    try:
        return [int(f) for f in fields]
    except ValueError:
        raise RawCaptureError(f"{where}: expected numbers, found {' '.join(fields)!r}") from None


def read_launch(directory: Path) -> RawLaunch:
    """The record in ``directory``; raises ``RawCaptureError`` when ``meta.txt`` is missing
    (the launch never finished: ``meta.txt.part`` only) or a line is malformed."""
    meta = directory / "meta.txt"
    if not meta.is_file():
        raise RawCaptureError(f"{directory}: the recorder did not finish this launch (no "
                              f"meta.txt; the program ended or faulted during the launch)")
    values: dict = {"params": [], "allocs": [], "pointers": []}
    lines = meta.read_text(encoding="utf-8", errors="replace").splitlines()
    if not lines or lines[-1] != "end":
        raise RawCaptureError(f"{meta}: the record is truncated (no final 'end' line)")
    for no, line in enumerate(lines[:-1], 1):
        where = f"{meta}:{no}"
        key, _, rest = line.partition(" ")
        fields = rest.split(" ")
        if key in ("kernel", "demangled", "api", "error"):
            values[key] = rest
        elif key in ("launch_index", "shared", "total_bytes"):
            values[key] = _ints(fields, 1, where)[0]
        elif key in ("grid", "block"):
            values[key] = tuple(_ints(fields, 3, where))
        elif key == "param":
            i, off, size = _ints(fields[:3], 3, where)
            data = bytes.fromhex(fields[3]) if len(fields) > 3 else b""
            if len(data) != size:
                raise RawCaptureError(f"{where}: parameter {i} has {size} bytes, found {len(data)}")
            values["params"].append(RawParam(i, off, data))
        elif key == "alloc":
            values["allocs"].append(RawAlloc(*_ints(fields, 3, where)))
        elif key == "pointer":
            values["pointers"].append(RawPointer(*_ints(fields, 3, where)))
        elif key == "param_info_errors":  # both parameter queries failed: kept for diagnosis
            values[key] = rest
        elif key == "refused":
            values["refused"] = tuple(_ints(fields, 2, where))
        else:
            raise RawCaptureError(f"{where}: unknown record {key!r}")
    for need in ("kernel", "grid", "block"):
        if need not in values:
            raise RawCaptureError(f"{meta}: no '{need}' line")
    return RawLaunch(directory=directory, mangled=values["kernel"],
                     demangled=values.get("demangled", values["kernel"]),
                     launch_index=values.get("launch_index", 0), api=values.get("api", ""),
                     grid=values["grid"], block=values["block"],
                     shared_bytes=values.get("shared", 0), params=tuple(values["params"]),
                     allocs=tuple(values["allocs"]), pointers=tuple(values["pointers"]),
                     total_bytes=values.get("total_bytes", 0), refused=values.get("refused"),
                     error=values.get("error", ""),
                     param_info_errors=values.get("param_info_errors", ""))


def _tsv(path: Path) -> list[list[str]]:
    if not path.is_file():
        return []
    return [line.split("\t") for line in path.read_text(encoding="utf-8", errors="replace")
            .splitlines() if line]


def read_output(directory: Path) -> RecorderOutput:
    """Every record under ``directory`` (``k<PID>.<N>``, in the order they were made).
    Raises ``RawCaptureError`` for a malformed record."""
    records = sorted((p for p in directory.glob("k*")
                      if p.is_dir() and re.fullmatch(r"k\d+\.\d+", p.name)),
                     key=lambda p: (p.stat().st_mtime_ns, p.name))
    launched = tuple((row[0], row[1] if len(row) > 1 else row[0])
                     for row in _tsv(directory / "launched.tsv"))
    counts: dict[str, int] = {}
    for path in sorted(directory.glob("counts.*.tsv")):
        for row in _tsv(path):
            if len(row) == 2 and row[0].isdigit():
                counts[row[1]] = counts.get(row[1], 0) + int(row[0])
    errors = tuple(line for line in (directory / "errors.txt").read_text().splitlines()
                   ) if (directory / "errors.txt").is_file() else ()
    skipped = tuple("\t".join(r) for r in _tsv(directory / "skipped.tsv"))
    return RecorderOutput(launches=tuple(read_launch(p) for p in records), launched=launched,
                          counts=counts, ready=(directory / "ready.txt").is_file(),
                          errors=errors, skipped=skipped,
                          runtime_only=tuple((r[0], r[1] if len(r) > 1 else r[0])
                                             for r in _tsv(directory / "runtime_only.tsv")))
