"""Request and response bodies of the runner's HTTP API (version 1).

The runner's contract data classes are the bodies' parts as they are: pydantic validates
plain ``dataclasses`` (``Problem``, ``Variant``, ``Evaluation``, ...) field by field and FastAPI
derives the OpenAPI schema from them, so ``gpu_runner/problem.py`` and ``gpu_runner/report.py``
stay the one definition of the wire format. ``decode(Type, data)`` turns JSON back into those
data classes on the client side.

Units as in the contract: microseconds, bytes, GB/s; ``time_budget_s`` in seconds.

The JSON encoding, both directions (``INF_NAN_MODE``, the one definition: every body is a
``_Body`` with ``WIRE_CONFIG``, the service's responses and the client's requests are written
with ``encode``): a finite float is a JSON number in its shortest round-trip form; NaN, +inf and -inf, which JSON has no number for, are the strings
``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` (pydantic's ``ser_json_inf_nan="strings"``), read
back as those floats by ``decode`` and by the service; an integer is a JSON integer of any size,
digit for digit (an element index or a byte count past 2^53 stays exact: Python reads JSON
integers exactly; a JavaScript client needs a BigInt-aware parser for those).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic_core import to_json

from gpu_runner.events import RunnerEvent
from gpu_runner.ncu_csv import Profile
from gpu_runner.problem import Problem, Variant
from gpu_runner.report import CompileReport, DeviceInfo, Evaluation
from gpu_runner.sanitize import SanitizeReport

API_PREFIX = "/v1"

JobState = Literal["queued", "running", "done", "failed", "cancelled"]
FINAL_STATES = ("done", "failed", "cancelled")

MAX_CANDIDATES = 512


# Non-finite floats as strings: JSON has no token for them (json.dumps' NaN is not JSON, and
# pydantic's default writes null, which no float field accepts back).
INF_NAN_MODE = "strings"
WIRE_CONFIG = ConfigDict(extra="forbid", ser_json_inf_nan=INF_NAN_MODE)


class _Body(BaseModel):
    model_config = WIRE_CONFIG


class EvaluateRequest(_Body):
    """Verify and time ``candidates`` against ``baseline`` on ``problem``
    (``Runner.evaluate``'s arguments). ``device``: the CUDA device index to run on (None: the
    least busy). ``devices``: split the candidates over these GPUs, each candidate verified and
    timed against the baseline on its own GPU (``gpu_runner.workers.split``; ``device``, when
    given, is listed first); None: one GPU, unless the runner splits every evaluation
    (``cudalens runner --split`` or ``--ray``)."""

    problem: Problem
    baseline: Variant
    candidates: list[Variant] = Field(default_factory=list, max_length=MAX_CANDIDATES)
    repetitions: int = Field(50, ge=1, le=100_000, description="timed rounds, at most")
    warmup: int = Field(3, ge=0, le=10_000, description="untimed launches of each variant first")
    time_budget_s: float = Field(60.0, gt=0, le=3600, description="timing loop budget, seconds")
    device: Optional[int] = Field(None, ge=0)
    devices: Optional[list[Annotated[int, Field(ge=0)]]] = Field(None, min_length=1,
                                                                 max_length=64)


class ProfileRequest(_Body):
    """Profile one launch of ``variant`` on ``problem``'s timed case (the first case, first
    seed's inputs) with Nsight Compute (``gpu_runner.profile``). Send a variant the runner
    has verified: the profile of a wrong kernel says nothing. ``timeout_s``: limit of the
    profile itself, seconds; ``device`` as in ``EvaluateRequest``."""

    problem: Problem
    variant: Variant
    timeout_s: float = Field(180.0, gt=0, le=600, description="profile time limit, seconds")
    device: Optional[int] = Field(None, ge=0)


ProfileUnavailableKind = Literal["no_gpu", "ncu_missing", "no_permission", "timeout",
                                 "variant_failed", "failed", "no_profile"]


class ProfileResponse(_Body):
    """``available``: whether ``profile`` holds a profile (occupancy and DRAM throughput in
    percent, stall reasons as cycles per issued instruction and share of all stall cycles).
    When not, ``kind`` and ``reason`` say why: ``no_gpu`` (no GPU here), ``ncu_missing``
    (Nsight Compute is not installed), ``no_permission`` (the driver refuses this user the
    performance counters), ``timeout``, ``variant_failed`` (it did not compile or launch under
    ncu), ``failed`` or ``no_profile`` (ncu ran but printed none). ``device``: the device index
    profiled on (-1 when none)."""

    available: bool
    device: int = -1
    profile: Optional[Profile] = None
    kind: Optional[ProfileUnavailableKind] = None
    reason: str = ""


SanitizerTool = Literal["memcheck", "racecheck", "initcheck", "synccheck"]


class SanitizeRequest(_Body):
    """Run compute-sanitizer's ``tools`` on one launch of ``variant`` on ``problem``'s ragged
    case (the first case when there is none), first seed's inputs (``gpu_runner.sanitize``).
    ``timeout_s``: limit of each tool's run, seconds; ``device`` as in ``EvaluateRequest``."""

    problem: Problem
    variant: Variant
    tools: list[SanitizerTool] = Field(
        default_factory=lambda: ["memcheck", "racecheck", "initcheck", "synccheck"],
        min_length=1, max_length=4)
    timeout_s: float = Field(120.0, gt=0, le=600, description="per-tool time limit, seconds")
    device: Optional[int] = Field(None, ge=0)


SanitizeUnavailableKind = Literal["no_gpu", "sanitizer_missing", "timeout", "variant_failed",
                                  "failed"]


class SanitizeResponse(_Body):
    """``available``: whether ``report`` holds the tools' findings (an empty list of
    findings: the tools found nothing). When not, ``kind`` and ``reason`` say why: ``no_gpu``,
    ``sanitizer_missing`` (compute-sanitizer is not installed), ``timeout``,
    ``variant_failed`` (it did not compile or launch) or ``failed``. ``device``: the device
    index it ran on (-1 when none)."""

    available: bool
    device: int = -1
    report: Optional[SanitizeReport] = None
    kind: Optional[SanitizeUnavailableKind] = None
    reason: str = ""


class CompileRequest(_Body):
    """Compile each variant for ``device``'s GPU; ``launches`` may be empty."""

    variants: list[Variant] = Field(min_length=1, max_length=MAX_CANDIDATES)
    device: Optional[int] = Field(None, ge=0)


class CompileResponse(_Body):
    device: int
    reports: list[CompileReport]


class DeviceEntry(_Body):
    index: int
    info: DeviceInfo


class DevicesResponse(_Body):
    devices: list[DeviceEntry]


class Health(_Body):
    """``status``: ``starting``, ``ready``, ``unavailable`` (no GPU) or ``failed``."""

    status: str
    message: str = ""
    devices: list[int] = Field(default_factory=list)


class JobCreated(_Body):
    id: str
    state: JobState
    device: int
    url: str


class JobStatus(_Body):
    """A job. ``events`` holds its ``gpu_runner.events`` from index ``progress_from`` on
    (ask with ``?since=N``), each with its ``kind``; ``progress`` the same events as text
    (``event.text()``), for a person; ``progress_next`` is the index to ask from next.
    ``result`` is set when ``state`` is ``done``; ``error`` (and ``error_kind``) when it is
    ``failed``. Times are seconds since the epoch (0 when not yet)."""

    # built on first use (the service's), not at import: the CLI imports this module only
    # for ``encode``, and the events' schemas cost a noticeable part of its start-up
    model_config = ConfigDict(**WIRE_CONFIG, defer_build=True)

    id: str
    state: JobState
    device: int
    candidates: int
    progress: list[str]
    events: list[RunnerEvent] = Field(default_factory=list)
    progress_from: int
    progress_next: int
    result: Optional[Evaluation] = None
    error: str = ""
    error_kind: str = ""
    created_at: float
    started_at: float = 0.0
    finished_at: float = 0.0


class ErrorBody(_Body):
    """Every error response: a machine-readable ``error`` code and a sentence ``message``."""

    error: str
    message: str
    detail: Optional[list[Any]] = None


T = TypeVar("T")


def encode(value: Any, *, indent: Optional[int] = None) -> bytes:
    """``value`` (a body above, a contract data class, or lists and dicts of them and of plain
    values) as JSON text in the wire encoding (see the module doc), ``indent`` spaces per level
    (None: one line). Raises ``pydantic_core.PydanticSerializationError`` for a value JSON
    cannot hold."""
    return to_json(value, indent=indent, inf_nan_mode=INF_NAN_MODE)


def decode(kind: type[T], data: Any) -> T:
    """``data`` (parsed JSON in the wire encoding) as an instance of ``kind`` (a contract data
    class such as ``Evaluation`` or ``DeviceInfo``): the strings ``"NaN"``, ``"Infinity"`` and
    ``"-Infinity"`` in a float field become those floats, integers stay exact. Raises
    ``pydantic.ValidationError``."""
    return TypeAdapter(kind).validate_python(data)
