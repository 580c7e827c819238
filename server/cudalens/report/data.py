"""What a kernel report shows, as typed values, read from an optimize run.

Three inputs give the same ``KernelReport``:

- the record ``cudalens optimize --json`` writes (``cudalens.present.result_record``: keys
  ``kernel``, ``device``, ``baseline``, ``candidates``, ``winner``, ``evaluations``, and
  since the report, ``problem``: the timed case's bytes, FLOPs and element types);
- a recorded benchmark file (``benchmarks/results/h200-examples-*.json``: ``device`` once,
  ``runs``: one such record per kernel, without its device), one run picked by kernel name;
- a stored run (``cudalens.store.records.RunRecord``, what the language server keeps).

Units are those of ``gpu_runner.report``: microseconds, GB/s (10^9 bytes/s), GFLOP/s.
Arithmetic intensity is the spec's FLOPs over the spec's bytes (read + written once) of the
timed case. A record without ``problem`` (recorded before it existed) gives the same ratio from
its baseline timing: ``gflops / achieved_gbps`` are both that case's FLOPs and bytes over the
same median, so their ratio is FLOPs / bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional

import cattrs

from cudalens.errors import CudalensError
from gpu_runner.report import DeviceInfo, Speedup, Timing, Verdict

Role = Literal["original", "candidate", "winner"]


class ReportInputError(CudalensError):
    """The input is not a results record the report can read; the message says what was
    expected, what was found, and where."""


@dataclass(frozen=True)
class TimedPoint:
    """One timed variant: the original kernel (``key`` ``"original"``) or a verified candidate
    (``key`` ``"c1"``, ``"c2"``, ... in the table's order). ``speedup`` None for the original."""

    key: str
    label: str
    role: Role
    timing: Timing
    speedup: Optional[Speedup] = None
    explanation: str = ""


@dataclass(frozen=True)
class FailedCandidate:
    """A candidate that did not pass verification: its label and the runner's verdict."""

    label: str
    status: str
    reason: str


@dataclass(frozen=True)
class HistoryEntry:
    """One variant of one runner evaluation of the search (``evaluation`` from 1); ``median_us``
    None when it was not timed."""

    evaluation: int
    label: str
    status: str
    median_us: Optional[float]
    speedup: Optional[float]


@dataclass(frozen=True)
class ProfileView:
    """The Nsight Compute profile of the run: what was profiled (``subject``), achieved
    occupancy and DRAM throughput (percent), main stalls as (reason, cycles per issued
    instruction, share of stall cycles in percent); or ``reason`` why there is none."""

    subject: str
    achieved_occupancy_pct: Optional[float] = None
    dram_throughput_pct: Optional[float] = None
    stalls: tuple[tuple[str, float, float], ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class KernelReport:
    """Everything the report shows of one run of one kernel (module doc for the units).

    ``bytes_moved``/``flops``: of the timed case, 0 when unknown. ``intensity``: FLOP/byte,
    None when the spec gives no FLOPs (the chart then shows bandwidth). ``points``: the
    original first, then each verified, timed candidate. ``sanitizer``: the record's
    ``sanitizer`` field as it is (None when absent), shown in its own section.
    """

    kernel: str
    file: str
    device: DeviceInfo
    provenance: str
    bytes_moved: int
    flops: int
    element_types: tuple[str, ...]
    intensity: Optional[float]
    points: tuple[TimedPoint, ...]
    failed: tuple[FailedCandidate, ...] = ()
    history: tuple[HistoryEntry, ...] = ()
    profile: Optional[ProfileView] = None
    sanitizer: Any = None
    stop: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def winner(self) -> Optional[TimedPoint]:
        return next((p for p in self.points if p.role == "winner"), None)


_conv = cattrs.Converter()


def _structure(data: Any, cls: type, where: str):
    try:
        return _conv.structure(data, cls)
    except (cattrs.BaseValidationError, KeyError, TypeError, ValueError) as exc:
        detail = "; ".join(cattrs.transform_error(exc)) if isinstance(
            exc, cattrs.BaseValidationError) else str(exc)
        raise ReportInputError(f"{where}: expected a {cls.__name__} object, found invalid "
                               f"data ({detail})") from None


def _timing(data: Any, where: str) -> Optional[Timing]:
    return None if data is None else _structure(data, Timing, where)


def _speedup(data: Any, where: str) -> Optional[Speedup]:
    return None if data is None else _structure(data, Speedup, where)


def pick_run(data: Any, kernel: Optional[str], where: str) -> dict:
    """The optimize record of ``data``: itself for a ``--json`` record, else the run of
    ``kernel`` in a recorded file (``device`` copied into it).

    Raises:
        ReportInputError: ``data`` is neither; the file holds several kernels and none was
            named; or no run is of ``kernel`` (the message lists the kernels it holds).
    """
    if not isinstance(data, dict):
        raise ReportInputError(f"{where}: expected a cudalens results record (a JSON object "
                               f"from 'cudalens optimize --json'), found a JSON "
                               f"{type(data).__name__}")
    if isinstance(data.get("runs"), list) and "device" in data:
        runs = [r for r in data["runs"] if isinstance(r, dict) and "candidates" in r]
        names = [str(r.get("kernel")) for r in runs]
        if not runs:
            raise ReportInputError(f"{where}: expected runs with candidates in the recorded "
                                   f"file, found none")
        if kernel is None and len(runs) > 1:
            raise ReportInputError(f"{where}: holds runs of {len(runs)} kernels "
                                   f"({', '.join(names)}); name one with --kernel")
        chosen = runs[0] if kernel is None else next(
            (r for r in runs if r.get("kernel") == kernel), None)
        if chosen is None:
            raise ReportInputError(f"{where}: no run of kernel {kernel!r}; it holds "
                                   f"{', '.join(names)}")
        prov = (f"recorded by {data.get('benchmark', 'a benchmark')}"
                + (f" on {data['date'][:10]}" if isinstance(data.get("date"), str) else "")
                + (f" at commit {data['commit']}" if data.get("commit") else ""))
        return {"device": data["device"], "provenance": prov, **chosen}
    missing = [k for k in ("kernel", "device", "baseline", "candidates") if k not in data]
    if missing:
        raise ReportInputError(f"{where}: expected a cudalens results record (from 'cudalens "
                               f"optimize --json', or a recorded file with 'device' and "
                               f"'runs'), found a JSON object without "
                               f"{', '.join(repr(k) for k in missing)}")
    if kernel is not None and data.get("kernel") != kernel:
        raise ReportInputError(f"{where}: the record is of kernel {data.get('kernel')!r}, "
                               f"not {kernel!r}")
    return data


def _intensity(flops: int, bytes_moved: int, baseline: Optional[Timing]) -> Optional[float]:
    if flops > 0 and bytes_moved > 0:
        return flops / bytes_moved
    if baseline is not None and baseline.gflops > 0 and baseline.achieved_gbps > 0:
        return baseline.gflops / baseline.achieved_gbps
    return None


def from_record(record: dict, where: str = "the record") -> KernelReport:
    """The report of one optimize record (``pick_run``'s answer).

    Raises:
        ReportInputError: a field does not have the shape ``result_record`` writes (the
            message names the field and candidate).
    """
    device = _structure(record.get("device"), DeviceInfo, f"{where}: 'device'")
    baseline = _timing(record.get("baseline"), f"{where}: 'baseline'")
    cands = record.get("candidates")
    if not isinstance(cands, list):
        raise ReportInputError(f"{where}: expected a list 'candidates', found "
                               f"{type(cands).__name__}")
    problem = record.get("problem") if isinstance(record.get("problem"), dict) else {}
    winner = record.get("winner") if isinstance(record.get("winner"), dict) else None
    win_key = None if winner is None else (winner.get("label"),
                                           (winner.get("timing") or {}).get("median_us"))
    points: list[TimedPoint] = []
    failed: list[FailedCandidate] = []
    if baseline is not None:
        points.append(TimedPoint("original", "original kernel", "original", baseline))
    for i, c in enumerate(cands, 1):
        here = f"{where}: candidate {i} ({c.get('label', '?') if isinstance(c, dict) else c!r})"
        if not isinstance(c, dict):
            raise ReportInputError(f"{here}: expected an object")
        verdict = _structure(c.get("verdict"), Verdict, f"{here}: 'verdict'")
        timing = _timing(c.get("timing"), f"{here}: 'timing'")
        if not verdict.ok:
            failed.append(FailedCandidate(str(c.get("label", "")), verdict.status, verdict.reason))
            continue
        if timing is None:
            continue
        label = str(c.get("label", f"candidate {i}"))
        role: Role = "winner" if (label, timing.median_us) == win_key else "candidate"
        points.append(TimedPoint(f"c{i}", label, role, timing,
                                 _speedup(c.get("speedup"), f"{here}: 'speedup'"),
                                 str(c.get("explanation", ""))))
    history = []
    for n, ev in enumerate(record.get("evaluations") or [], 1):
        for v in (ev or {}).get("variants") or []:
            t, s, vd = v.get("timing"), v.get("speedup"), v.get("verdict") or {}
            history.append(HistoryEntry(n, str(v.get("label", "")), str(vd.get("status", "?")),
                                        None if not t else float(t["median_us"]),
                                        None if not s else float(s["value"])))
    flops, nbytes = int(problem.get("flops", 0) or 0), int(problem.get("bytes_moved", 0) or 0)
    notes = []
    for p in record.get("pruned") or []:
        notes.append(f"pruned before timing: {p.get('label')}: {p.get('reason')}")
    return KernelReport(
        kernel=str(record.get("kernel")), file=str(record.get("file", "")), device=device,
        provenance=str(record.get("provenance") or "a 'cudalens optimize --json' record"),
        bytes_moved=nbytes, flops=flops,
        element_types=tuple(problem.get("element_types") or ()),
        intensity=_intensity(flops, nbytes, baseline), points=tuple(points),
        failed=tuple(failed), history=tuple(history),
        profile=_profile_view(record.get("profile"), where),
        sanitizer=record.get("sanitizer"), stop=str(record.get("stop") or ""),
        notes=tuple(notes))


def _profile_view(data: Any, where: str) -> Optional[ProfileView]:
    """A ``RunProfile``-shaped dict (``cudalens.store.records.profile_to_dict``) as a view."""
    if data is None:
        return None
    from cudalens.store.records import profile_from_dict

    try:
        return profile_view(profile_from_dict(data))
    except ValueError as exc:
        raise ReportInputError(f"{where}: 'profile': {exc}") from None


def profile_view(run_profile) -> ProfileView:
    """A ``cudalens.store.records.RunProfile`` as a ``ProfileView``."""
    p = run_profile.profile
    if p is None:
        return ProfileView(subject=run_profile.label, reason=run_profile.reason or "not profiled")
    return ProfileView(subject=run_profile.label,
                       achieved_occupancy_pct=p.achieved_occupancy_pct,
                       dram_throughput_pct=p.dram_throughput_pct,
                       stalls=tuple((s.reason, s.cycles_per_issue, s.share_pct)
                                    for s in p.stalls))


def from_run_record(run, element_types: tuple[str, ...] = ()) -> KernelReport:
    """The report of a stored run (``cudalens.store.records.RunRecord``). Its winner is the
    fastest candidate faster than the original beyond noise (``RunRecord.offers``), as the
    optimize flow picks it; ``element_types`` from the kernel's spec where the caller has it."""
    offers = run.offers()
    win_id = offers[0].id if offers else None
    points: list[TimedPoint] = []
    failed: list[FailedCandidate] = []
    if run.baseline is not None:
        points.append(TimedPoint("original", "original kernel", "original", run.baseline))
    for i, c in enumerate(run.candidates, 1):
        r = c.result
        if not r.verdict.ok:
            failed.append(FailedCandidate(c.label, r.verdict.status, r.verdict.reason))
        elif r.timing is not None:
            points.append(TimedPoint(f"c{i}", c.label, "winner" if c.id == win_id else
                                     "candidate", r.timing, r.speedup, c.explanation))
    return KernelReport(
        kernel=run.kernel, file=run.path, device=run.device,
        provenance=f"{run.provenance}, {run.created[:19].replace('T', ' ')} UTC",
        bytes_moved=run.bytes_moved, flops=run.flops, element_types=tuple(element_types),
        intensity=_intensity(run.flops, run.bytes_moved, run.baseline), points=tuple(points),
        failed=tuple(failed),
        profile=None if run.profile is None else profile_view(run.profile))
