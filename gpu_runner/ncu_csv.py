"""Reading what Nsight Compute (``ncu --csv --metrics ...``) prints: a short profile of one kernel.

The format (Nsight Compute CLI, "Output Pages": the default ``details`` page with ``--csv``):
one CSV row per metric per profiled kernel launch, fields quoted, after whatever the profiler
and the application printed first (``==PROF== Connected to process ...``). The header names the
columns; recent versions (2023 and later) print::

    "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",
    "Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",
    "Metric Value"

and older ones ``..."Kernel Name","Kernel Time","Context","Stream","Section Name",...``; only
``ID``, ``Kernel Name``, ``Metric Name`` and ``Metric Value`` are used here, by name. Metrics
asked for with ``--metrics`` appear under the section "Command line profiler metrics". Values
may carry thousands separators (``1,234.56``) and read ``n/a`` where the GPU lacks a metric.

Metrics (names as Nsight Compute's own sections use them):

- achieved occupancy: ``sm__warps_active.avg.pct_of_peak_sustained_active`` (%, the
  Occupancy section's "Achieved Occupancy");
- DRAM throughput: ``dram__throughput.avg.pct_of_peak_sustained_elapsed`` (% of peak, the
  Speed Of Light section's "DRAM Throughput");
- warp stall reasons: ``smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio``
  (cycles a warp spent stalled for that reason per issued instruction, the Warp State
  Statistics section's chart).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Optional

OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
_STALL_PREFIX = "smsp__average_warps_issue_stalled_"
_STALL_SUFFIX = "_per_issue_active.ratio"
# Stall reasons of the Warp State Statistics section on compute capability 7.0 and later.
STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss",
                 "lg_throttle", "long_scoreboard", "math_pipe_throttle", "membar",
                 "mio_throttle", "misc", "no_instruction", "not_selected", "short_scoreboard",
                 "sleeping", "tex_throttle", "wait")
STALLS = tuple(f"{_STALL_PREFIX}{r}{_STALL_SUFFIX}" for r in STALL_REASONS)
METRICS = (OCCUPANCY, DRAM, *STALLS)
TOP_STALLS = 3
_NEEDED_COLUMNS = ("ID", "Kernel Name", "Metric Name", "Metric Value")


class NcuParseError(ValueError):
    """The text is not ncu CSV output holding the metrics asked for; the message says what
    was expected and what was found."""


@dataclass(frozen=True)
class Stall:
    """One warp stall reason: ``cycles_per_issue`` (cycles per issued instruction) and its
    ``share_pct`` of all stall cycles reported."""

    reason: str  # e.g. "long scoreboard"
    cycles_per_issue: float
    share_pct: float


@dataclass(frozen=True)
class Profile:
    """A short profile of one kernel launch. Percentages are 0-100."""

    kernel: str
    achieved_occupancy_pct: float
    dram_throughput_pct: float
    stalls: tuple[Stall, ...]  # the largest first, at most TOP_STALLS
    tool: str = "Nsight Compute"

    def summary(self) -> str:
        """``achieved occupancy 61.2%, DRAM throughput 83.4% of peak; top stalls: long
        scoreboard 9.81 cycles/instruction (72%), ...``."""
        stalls = ", ".join(f"{s.reason} {s.cycles_per_issue:.2f} cycles/instruction "
                           f"({s.share_pct:.0f}%)" for s in self.stalls) or "none reported"
        return (f"achieved occupancy {self.achieved_occupancy_pct:.1f}%, DRAM throughput "
                f"{self.dram_throughput_pct:.1f}% of peak; top stalls: {stalls}")


def _number(text: str) -> Optional[float]:
    t = text.strip().replace(",", "")
    if t.lower() in ("", "n/a", "nan"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def _rows(text: str) -> list[dict[str, str]]:
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        shown = next((line for line in lines if line.strip()), "(nothing)")
        raise NcuParseError(f"expected ncu CSV output with a header starting \"ID\", found no "
                            f"such line (first line: {shown[:120]!r})")
    body = [line for line in lines[start:] if line.startswith('"')]
    reader = csv.DictReader(io.StringIO("\n".join(body)))
    missing = [c for c in _NEEDED_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise NcuParseError(f"expected the columns {', '.join(_NEEDED_COLUMNS)} in ncu's CSV "
                            f"header, found {reader.fieldnames} (missing {', '.join(missing)})")
    return list(reader)


def parse_profile(text: str) -> Profile:
    """The profile of the first kernel launch in ``text`` (ncu's stdout with ``--csv``).

    Raises:
        NcuParseError: no CSV header, no profiled launch, or the occupancy or DRAM metric
            missing or unreadable for that launch.
    """
    rows = _rows(text)
    if not rows:
        raise NcuParseError("ncu's CSV output holds a header but no profiled kernel launch "
                            "(was the kernel launched inside the profiled range?)")
    first = rows[0]["ID"]
    values: dict[str, Optional[float]] = {}
    for row in rows:
        if row["ID"] == first:
            values[row["Metric Name"]] = _number(row["Metric Value"] or "")

    def need(name: str, what: str) -> float:
        if name not in values:
            raise NcuParseError(f"expected the metric {name} ({what}) for launch {first}, found "
                                f"only {', '.join(sorted(values)) or 'no metrics'}")
        value = values[name]
        if value is None:
            raise NcuParseError(f"the metric {name} ({what}) of launch {first} has no numeric "
                                f"value")
        return value

    occupancy = need(OCCUPANCY, "achieved occupancy")
    dram = need(DRAM, "DRAM throughput")
    found = [(name[len(_STALL_PREFIX):-len(_STALL_SUFFIX)], v) for name, v in values.items()
             if name.startswith(_STALL_PREFIX) and name.endswith(_STALL_SUFFIX) and v is not None]
    total = sum(v for _, v in found)
    ranked = sorted(found, key=lambda rv: -rv[1])[:TOP_STALLS]
    stalls = tuple(Stall(r.replace("_", " "), v, 100.0 * v / total if total > 0 else 0.0)
                   for r, v in ranked if v > 0)
    return Profile(kernel=rows[0]["Kernel Name"], achieved_occupancy_pct=occupancy,
                   dram_throughput_pct=dram, stalls=stalls)
