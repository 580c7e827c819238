"""What the results store keeps: one optimize run of one kernel, with every candidate.

A ``RunRecord`` is what the language server needs to show a kernel's measurement and offer
its candidates after a restart, without the runner: the device, the baseline's timing and
compile report, the problem's size facts, and for each candidate its label, explanation,
launch configuration, the whole rewritten source and the runner's verdict and timing.

Times are in microseconds, bandwidths in GB/s, rates in GFLOP/s, sizes in bytes (the units
of ``gpu_runner.report``). Records convert to and from JSON-compatible dicts with
``to_dict``/``from_dict`` (cattrs), so the store holds plain JSON text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Optional, Union

import cattrs

from gpu_runner.ncu_csv import Profile
from gpu_runner.report import CandidateResult, CompileReport, DeviceInfo, Timing
from cudalens.sanitizer_status import SanitizerStatus
from cudalens.textfile import to_bytes

# A candidate is offered only when the low end of its speedup's 95% confidence interval is
# above this (the CLI's rule, ``cudalens.optimize.SIGNIFICANT_SPEEDUP``).
SIGNIFICANT_SPEEDUP = 1.0


@dataclass(frozen=True)
class LaunchRecord:
    """A launch configuration as spec expressions (``block``/``grid`` x first)."""

    block: tuple[str, ...]
    grid: tuple[str, ...]
    shared: str = "0"


@dataclass(frozen=True)
class CandidateRecord:
    """One evaluated candidate.

    ``id``: ``candidate_id(source, launch)``, stable across runs and restarts. ``source``: the
    whole rewritten file the runner compiled. ``result``: the runner's compile report,
    verdict, timing and speedup for it. ``launch_changed``: ``launch`` is not the user's (the
    spec's) launch; ``drop_in``: then the runner's result for the same source under the
    user's launch, None when not checked (``cudalens.dropin``).
    """

    id: str
    label: str
    explanation: str
    passes: tuple[str, ...]
    launch: LaunchRecord
    source: str
    result: CandidateResult
    launch_changed: bool = False
    drop_in: Optional[CandidateResult] = None

    @property
    def drop_in_ok(self) -> bool:
        """Correct under the user's launch: its own launch is the user's and it passed, or
        it passed there too."""
        if not self.launch_changed:
            return self.verified
        return self.drop_in is not None and self.drop_in.verdict.ok and \
            self.drop_in.speedup is not None

    @property
    def verified(self) -> bool:
        return self.result.verdict.ok and self.result.speedup is not None

    @property
    def significant(self) -> bool:
        """Verified and faster than the baseline beyond noise (95% CI above 1.0)."""
        return self.verified and self.result.speedup.ci_low > SIGNIFICANT_SPEEDUP


BASELINE = "baseline"  # RunProfile.subject of a profile of the run's baseline


@dataclass(frozen=True)
class RunProfile:
    """The Nsight Compute profile taken after a run (``gpu_runner.ncu_csv.Profile``: achieved
    occupancy and DRAM throughput in percent, the main warp stall reasons), or why there is
    none.

    ``subject``: ``BASELINE`` or the profiled candidate's id; ``label``: its label as shown
    (``baseline``, ``c3``). ``profile``: None when the runner could not profile, and then
    ``reason`` says why (the runner's words). ``created``: ISO 8601 UTC time.
    """

    subject: str
    label: str
    created: str
    profile: Optional[Profile] = None
    reason: str = ""


@dataclass(frozen=True)
class RunRecord:
    """One optimize run of one kernel, as stored.

    key: the store key (``cudalens.store.keys.result_key``) of the kernel source, spec, flags
        and device the run measured. path: the source file (absolute). kernel: the kernel's
        qualified name. base_sha: sha256 of the whole file text the run started from.
    device: the runner's device facts. baseline: the original kernel's timing (None when it
        was not timed). bytes_moved / flops: of the timed case, per launch (flops 0 when the
        spec gives none). threads_per_block / shared_bytes: the baseline's launch.
    spec_origin: the spec file's path, or ``"inferred"``. provenance: where the numbers
        come from in words (the runner's address, or the recorded file a replay answered
        from). created: ISO 8601 UTC time the run finished. derived_from: set when this
        record was not measured as a baseline but carried over from a candidate of an earlier
        run that the user applied (``"<run key>:<candidate id>"``).
    profile: the Nsight Compute profile taken after the run (of the winner, else the
        baseline), None when none was attempted (the runner cannot profile, or profiling is
        off). Stored in its own column (``sqlite``), not in the record's JSON.
    sanitizer: the compute-sanitizer check of the original before the run (clean, findings,
        or not run and why: ``cudalens.sanitizer_status``); None in records stored before it.
    """

    key: str
    path: str
    kernel: str
    base_sha: str
    device: DeviceInfo
    baseline: Optional[Timing]
    baseline_compile: CompileReport
    bytes_moved: int
    flops: int
    threads_per_block: int
    shared_bytes: int
    spec_origin: str
    provenance: str
    created: str
    candidates: tuple[CandidateRecord, ...] = field(default=())
    budget: int = 0
    seed: int = 0
    derived_from: str = ""
    profile: Optional[RunProfile] = None
    sanitizer: Optional[SanitizerStatus] = None

    def candidate(self, candidate_id: str) -> CandidateRecord:
        """The candidate with ``candidate_id``.

        Raises:
            KeyError: no candidate of this run has that id (the message lists the ids).
        """
        for c in self.candidates:
            if c.id == candidate_id:
                return c
        known = ", ".join(c.id for c in self.candidates) or "none"
        raise KeyError(f"run {self.key[:12]} of {self.kernel} has no candidate {candidate_id!r} "
                       f"(candidates: {known})")

    def offers(self, rejected: frozenset[str] = frozenset()) -> list[CandidateRecord]:
        """Significant candidates not in ``rejected``, fastest first."""
        good = [c for c in self.candidates if c.significant and c.id not in rejected]
        return sorted(good, key=lambda c: -c.result.speedup.value)

    def best_verified(self) -> Optional[CandidateRecord]:
        """The fastest verified candidate, significant or not."""
        timed = [c for c in self.candidates if c.verified]
        return max(timed, key=lambda c: c.result.speedup.value, default=None)


def candidate_id(source: str, launch: LaunchRecord) -> str:
    """A short stable id of a candidate: the first 16 hex digits of sha256 over its source
    and launch expressions."""
    h = hashlib.sha256()
    h.update(to_bytes(source))
    h.update(b"\0" + "\x1f".join(launch.block).encode() + b"\0" + "\x1f".join(launch.grid).encode()
             + b"\0" + launch.shared.encode())
    return h.hexdigest()[:16]


_converter = cattrs.Converter()


def _number(value, _type) -> Union[int, float]:
    """A ``Union[int, float]`` value (a ``Mismatch``'s expected and actual values: an integer
    buffer's exact int, a float buffer's float, NaN included) kept as it was stored."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, found {value!r}")
    return value


_converter.register_structure_hook(Union[int, float], _number)


def to_dict(record: RunRecord) -> dict:
    """``record`` as a JSON-compatible dict."""
    return _converter.unstructure(record)


def profile_to_dict(profile: RunProfile) -> dict:
    """``profile`` as a JSON-compatible dict."""
    return _converter.unstructure(profile)


def profile_from_dict(data: dict) -> RunProfile:
    """The inverse of ``profile_to_dict``.

    Raises:
        ValueError: ``data`` is not a stored run profile (the message names what is wrong).
    """
    try:
        return _converter.structure(data, RunProfile)
    except (cattrs.BaseValidationError, KeyError, TypeError, ValueError) as exc:
        detail = "; ".join(cattrs.transform_error(exc)) if isinstance(
            exc, cattrs.BaseValidationError) else str(exc)
        raise ValueError(f"expected a stored run profile, found invalid data: {detail}") from None


def from_dict(data: dict) -> RunRecord:
    """The inverse of ``to_dict``.

    Raises:
        ValueError: ``data`` is not a stored run record (the message names what is wrong).
    """
    try:
        return _converter.structure(data, RunRecord)
    except (cattrs.BaseValidationError, KeyError, TypeError, ValueError) as exc:
        detail = "; ".join(cattrs.transform_error(exc)) if isinstance(
            exc, cattrs.BaseValidationError) else str(exc)
        raise ValueError(f"expected a stored run record, found invalid data: {detail}") from None
