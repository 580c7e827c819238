"""The runner's output contract: device facts, verdicts and timings.

Times are in microseconds, bandwidths in GB/s (10^9 bytes per second), rates in GFLOP/s.
All classes convert to dicts with ``dataclasses.asdict``; a float may be NaN or infinite (an
unwritten element reads back as the NaN poison) and an int may exceed 2^53, so JSON text is
written with ``gpu_runner.service.schema``'s encoding (non-finite floats as strings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional, Union

VerdictStatus = Literal[
    "passed",
    "compile_error",   # nvcc rejected the source, or the kernel symbol was not found
    "launch_error",    # the launch failed or the kernel faulted (illegal address, ...)
    "mismatch",        # an output differs from the baseline's beyond tolerance
    "constant_output",  # a float output is one value throughout where the baseline's varies
    "unwritten",       # an output still holds the poison value where the baseline wrote
    "input_modified",  # an input buffer differs after the run
    "out_of_bounds",   # a guard region around a buffer was overwritten
    "nondeterministic",  # two runs on the same inputs disagree
    "stale_after_timing",  # outputs after the timing loop differ from the baseline's
    "timeout",         # the kernel did not finish in time
]


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    l2_bytes: int
    max_threads_per_block: int
    max_shared_bytes_per_block: int
    sm_clock_mhz: int
    memory_clock_mhz: int
    driver_version: str  # e.g. "580.159.04" where NVML is available, else the CUDA driver API version
    cuda_driver_api: int  # e.g. 13000
    copy_bandwidth_gbps: float  # measured device-to-device copy, bytes read + written per second


@dataclass(frozen=True)
class Mismatch:
    """The first element (lowest index) that differs, with the values seen: Python ints for
    integer buffers (exact, any size: a uint64 element), floats for float buffers (NaN where
    the element still holds the poison, +-inf where the kernel wrote one)."""

    case: str
    seed: int
    buffer: str
    index: int
    expected: Union[int, float]
    actual: Union[int, float]
    mismatched: int  # how many elements differ in this buffer
    total: int


@dataclass(frozen=True)
class Verdict:
    variant: str
    status: VerdictStatus
    reason: str  # one sentence a user can act on, naming case, seed, buffer and index
    mismatch: Optional[Mismatch] = None
    # True when the candidate itself was never run: another kernel lost the GPU context first
    # (``verify._skip_rest``); the supervisor runs it again in a fresh worker
    not_judged: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "passed"


@dataclass(frozen=True)
class CompileReport:
    variant: str
    ok: bool
    registers: int = 0
    static_shared_bytes: int = 0
    local_bytes: int = 0  # per-thread local memory (stack and spills)
    max_threads_per_block: int = 0
    log: str = ""  # compiler output when it failed (or warnings)
    seconds: float = 0.0


@dataclass(frozen=True)
class Timing:
    """Event-timed kernel durations of one variant on the timed case."""

    variant: str
    median_us: float
    q1_us: float
    q3_us: float
    min_us: float
    samples: int
    achieved_gbps: float  # Case.bytes_moved / median
    percent_of_copy: float  # achieved_gbps / DeviceInfo.copy_bandwidth_gbps * 100
    gflops: float = 0.0  # Case.flops / median, 0 when flops unknown
    # The median's distribution-free 95% confidence interval (stats.median_ci) and its half
    # width as a percentage of the median; 0.0 where not computed.
    median_ci_low_us: float = 0.0
    median_ci_high_us: float = 0.0
    ci_half_width_pct: float = 0.0
    # Why the timing loop stopped: "converged" (every variant's median CI half width within
    # the target), "budget" (time budget ran out first), "repetitions" (the cap); "" unknown.
    stop_reason: str = ""
    # NVML, sampled right after the timing loop (gpu_runner.throttle): SM clock in MHz and the
    # active clocks event reasons; None when unknown, and clock_source says why.
    sm_clock_mhz: Optional[int] = None
    throttle_reasons: Optional[tuple[str, ...]] = None
    clock_source: str = "unknown: not sampled"
    # What resetting persisting L2 lines before timing did (l2flush.reset_persisting_l2).
    persisting_l2: str = ""
    # The roofline check (gpu_runner.roofline): the least time the spec's bytes and FLOPs
    # allow, and whether the median is below it (then the speedup is not a win).
    roofline_floor_us: float = 0.0
    above_roofline: bool = False
    roofline_note: str = ""


@dataclass(frozen=True)
class Speedup:
    """baseline median / candidate median with a 95% bootstrap confidence interval."""

    value: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class CandidateResult:
    compile: CompileReport
    verdict: Verdict
    timing: Optional[Timing] = None
    speedup: Optional[Speedup] = None
    # The runner's index of the GPU this row was verified and timed on (its speedup is against
    # the baseline timed on that GPU, in the same run); -1 where unknown.
    device: int = -1


@dataclass(frozen=True)
class GpuRun:
    """One GPU of an evaluation: its runner index, its facts, and the baseline's timing there
    (the first run on it that timed the baseline; None if none did)."""

    index: int
    info: DeviceInfo
    baseline: Optional[Timing] = None


@dataclass(frozen=True)
class Evaluation:
    device: DeviceInfo
    baseline_compile: CompileReport
    baseline: Optional[Timing]
    candidates: tuple[CandidateResult, ...] = field(default=())
    error: str = ""  # set when the baseline itself could not be compiled or run
    # Every GPU the candidates ran on, in the order first used (``device``/``baseline`` above
    # are the first's). A row's ``device`` names its entry; speedups never mix two GPUs.
    gpus: tuple[GpuRun, ...] = field(default=())
