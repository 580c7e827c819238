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
from typing import Any, Literal, Optional, Union

import cattrs

from cudalens import sanitizer_status
from cudalens.dropin import launch_words, phrase
from cudalens.sanitizer_status import SanitizerStatus
from cudalens.errors import CudalensError
from cudalens.spec.model import LaunchDecl
from gpu_runner.report import DeviceInfo, Speedup, Timing, Verdict

Role = Literal["original", "candidate", "winner"]
UserLaunchKind = Literal["same", "drop_in", "new_launch", "not_checked"]


class ReportInputError(CudalensError):
    """The input is not a results record the report can read; the message says what was
    expected, what was found, and where."""


@dataclass(frozen=True)
class UserLaunch:
    """A verified candidate under the launch the user's program uses (``cudalens.dropin``).

    ``kind``: ``"same"`` (it keeps the user's launch: a drop-in, its own speedup),
    ``"drop_in"`` (timed with another launch and correct under the user's too, at
    ``drop_in_speedup``), ``"new_launch"`` (wrong under the user's launch, ``reason`` says how:
    it needs ``launch``) or ``"not_checked"`` (it was not run under the user's launch).
    ``launch``: the candidate's launch in the spec's words (``block = 64, grid = ceil_div(rows,
    2)``), "" for ``same``. ``words``: the phrase the CLI prints (``1.80x as a drop-in; 14.80x
    with block = 64, grid = ceil_div(rows, 2)``)."""

    kind: UserLaunchKind
    words: str
    launch: str = ""
    drop_in_speedup: Optional[Speedup] = None
    reason: str = ""

    @property
    def is_drop_in(self) -> bool:
        return self.kind in ("same", "drop_in")


@dataclass(frozen=True)
class TimedPoint:
    """One timed variant: the original kernel (``key`` ``"original"``) or a verified candidate
    (``key`` ``"c1"``, ``"c2"``, ... in the table's order). ``speedup`` None for the original.
    ``user_launch``: the candidate under the user's launch; None for the original and for
    records written before cudalens checked it."""

    key: str
    label: str
    role: Role
    timing: Timing
    speedup: Optional[Speedup] = None
    explanation: str = ""
    user_launch: Optional[UserLaunch] = None


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
    original first, then each verified, timed candidate. ``sanitizer``: the compute-sanitizer
    check of the original before the run (``cudalens.sanitizer_status``: clean, findings with
    their lines, or not run and why); None for a record written before runs kept it.
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
    sanitizer: Optional[SanitizerStatus] = None
    stop: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def winner(self) -> Optional[TimedPoint]:
        return next((p for p in self.points if p.role == "winner"), None)

    @property
    def best_drop_in(self) -> Optional[TimedPoint]:
        """The fastest candidate that is correct under the user's launch and faster there
        beyond noise (95% CI above 1.0), as ``OptimizeResult.best_drop_in`` picks it."""
        def there(p: TimedPoint) -> Optional[Speedup]:
            u = p.user_launch
            if u is None or not u.is_drop_in:
                return None
            return p.speedup if u.kind == "same" else u.drop_in_speedup

        good = [(p, there(p)) for p in self.points if p.role != "original"]
        good = [(p, s) for p, s in good if s is not None and s.ci_low > 1.0]
        return max(good, key=lambda ps: ps[1].value, default=(None, None))[0]


def user_launch_view(own: Optional[Speedup], new_launch: Optional[LaunchDecl],
                     checked: bool, drop_in_ok: bool, drop_in_speedup: Optional[Speedup],
                     reason: str = "") -> UserLaunch:
    """The ``UserLaunch`` of a verified candidate: ``new_launch`` None when it keeps the user's
    launch; ``checked`` whether it ran under the user's launch, ``drop_in_ok`` whether it
    passed there (with ``drop_in_speedup``), ``reason`` the verdict there when it did not."""
    if new_launch is None:
        return UserLaunch("same", phrase(None if own is None else own.value, None, True, None))
    words = launch_words(new_launch)
    ok = checked and drop_in_ok and drop_in_speedup is not None
    kind: UserLaunchKind = "drop_in" if ok else "new_launch" if checked else "not_checked"
    return UserLaunch(kind, phrase(None if own is None else own.value, words, checked,
                                   drop_in_speedup.value if ok else None),
                      words, drop_in_speedup if ok else None, "" if ok else reason)


_conv = cattrs.Converter()
_WIRE_FLOATS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _number(value: Any, _type: Any) -> Union[int, float]:
    """A ``Mismatch``'s expected or actual value as the record writes it: a number, or NaN and
    the infinities as the strings of the runner's JSON (``gpu_runner.service.schema``)."""
    if isinstance(value, str) and value in _WIRE_FLOATS:
        return _WIRE_FLOATS[value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number (or 'NaN', 'Infinity'), found {value!r}")
    return value


_conv.register_structure_hook(Union[int, float], _number)


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
        speedup = _speedup(c.get("speedup"), f"{here}: 'speedup'")
        points.append(TimedPoint(f"c{i}", label, role, timing, speedup,
                                 str(c.get("explanation", "")),
                                 _user_launch_of(c, speedup, here)))
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
        sanitizer=_sanitizer_of(record.get("sanitizer"), where),
        stop=str(record.get("stop") or ""),
        notes=tuple(notes))


def _sanitizer_of(data: Any, where: str) -> Optional[SanitizerStatus]:
    if data is None:
        return None
    try:
        return sanitizer_status.from_dict(data, f"{where}: 'sanitizer'")
    except ValueError as exc:
        raise ReportInputError(str(exc)) from None


def _launch_decl(data: Any, where: str) -> LaunchDecl:
    if not isinstance(data, dict) or not data.get("block") or not data.get("grid"):
        raise ReportInputError(f"{where}: expected a launch object with 'block' and 'grid' "
                               f"lists, found {data!r}")
    return LaunchDecl(block=tuple(map(str, data["block"])), grid=tuple(map(str, data["grid"])),
                      shared=str(data.get("shared") or "0"))


def _user_launch_of(c: dict, own: Optional[Speedup], where: str) -> Optional[UserLaunch]:
    """A record candidate's ``launch_change``/``drop_in`` fields (``present.result_record``) as
    a ``UserLaunch``; None for a record that has neither (written before they existed)."""
    if "launch_change" not in c and "drop_in" not in c:
        return None
    change, d = c.get("launch_change"), c.get("drop_in")
    new = None if change is None else _launch_decl(
        change.get("launch") if isinstance(change, dict) else None,
        f"{where}: 'launch_change'")
    if d is not None and not isinstance(d, dict):
        raise ReportInputError(f"{where}: 'drop_in': expected an object or null, found {d!r}")
    verdict = (d or {}).get("verdict") or {}
    reason = f"{verdict.get('status', '?')}: {verdict.get('reason', '')}".rstrip(": ")
    return user_launch_view(own, new, d is not None, bool((d or {}).get("ok")),
                            _speedup((d or {}).get("speedup"), f"{where}: 'drop_in'"), reason)


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
            d = c.drop_in
            new = (LaunchDecl(block=c.launch.block, grid=c.launch.grid, shared=c.launch.shared)
                   if c.launch_changed else None)
            view = user_launch_view(
                r.speedup, new, d is not None, c.drop_in_ok, None if d is None else d.speedup,
                "" if d is None else f"{d.verdict.status}: {d.verdict.reason}".rstrip(": "))
            points.append(TimedPoint(f"c{i}", c.label, "winner" if c.id == win_id else
                                     "candidate", r.timing, r.speedup, c.explanation, view))
    return KernelReport(
        kernel=run.kernel, file=run.path, device=run.device,
        provenance=f"{run.provenance}, {run.created[:19].replace('T', ' ')} UTC",
        bytes_moved=run.bytes_moved, flops=run.flops, element_types=tuple(element_types),
        intensity=_intensity(run.flops, run.bytes_moved, run.baseline), points=tuple(points),
        failed=tuple(failed), sanitizer=run.sanitizer,
        profile=None if run.profile is None else profile_view(run.profile))
