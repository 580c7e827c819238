"""A deterministic MODEL of a GPU runner for CI: no GPU, no recordings, NOT measurements.

Why: the language-server and editor tests must accept any change to the optimizer's search
(new passes, other candidates) without a GPU. Replaying recorded H200 numbers keyed by each
candidate's exact source (``replay_runner.py``) cannot do that; this model answers every
request, from the request's structure alone, the same way every time. The H200 recordings
stay the source of the README tables (``benchmarks/readme_table.py``) and the GPU tests
measure on real hardware.

The model (every number below is a modelling choice, not a fact about any GPU):

* Device: ``MODEL_DEVICE``, named "model GPU (not a measurement)", with a copy bandwidth of
  ``BANDWIDTH_GBPS`` and an FP32 rate of ``RATE_GFLOPS``.
* Time of a variant on the timed case (the problem's first case, launched with the variant's
  first launch), in microseconds: ``OVERHEAD_US + BLOCK_US * blocks + max(bytes_moved /
  (bandwidth * access * launch), flops / (rate * compute * launch))`` (a roofline: Williams,
  Waterman & Patterson 2009), where ``access`` is ``BASE_ACCESS`` times the factor of every
  structural feature found in the variant's source (``FEATURES``: ``__restrict__`` pointers,
  vector loads, staging through ``__shared__`` memory (a tiled transpose or matmul: coalesced
  instead of strided accesses), grid-stride loops, ``#pragma unroll``, warp shuffles,
  ``__launch_bounds__``), capped at ``MAX_ACCESS``; ``compute`` is ``FAST_MATH`` with
  ``-use_fast_math`` (else 1); ``launch`` (``launch_factor``) rewards theoretical occupancy,
  blocks near 256 threads and a last wave that fills the SMs.
* Verdicts: every variant compiles (nothing is compiled) and is "verified" (nothing is run),
  with a reason saying so, except candidates with a scripted test verdict
  (``scripted.ScriptedVerdicts`` via ``CUDALENS_REPLAY_SCRIPTED``, for test-written LLM
  candidates). Registers: ``REGISTERS`` plus ``FEATURE_REGISTERS`` per feature found.
* Speedups: baseline median / candidate median, with a fixed +-``CI_HALF`` relative interval.

Only the variant's source text, nvcc options and launches, and the problem's sizes enter a
number: never a label, a candidate's index or the time of day. ``provenance`` says all of
this is a model; so does every verdict's reason and the device name the editor shows.

``make_client(settings)`` is the runner factory of the language-server tests
(``--runner-factory model_runner:make_client``); ``ModelBackend`` is the same model as a worker
backend (``gpu_runner.workers.backend.Backend``) for the live fake GPU service. Environment:
``CUDALENS_MODEL_STEP_S`` sleeps that many seconds after each event (so a test can
cancel a run in flight); ``CUDALENS_REPLAY_SCRIPTED`` (see ``scripted.py``).
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from cudalens.engine.runner import WithoutTools
from gpu_runner.events import Compiling, TimingRound, Verifying
from gpu_runner.problem import Launch, Problem, Variant
from gpu_runner.report import (CandidateResult, CompileReport, DeviceInfo, Evaluation, Speedup,
                               Timing, Verdict)

from scripted import ENV as SCRIPTED_ENV
from scripted import ScriptedVerdicts

STEP_ENV = "CUDALENS_MODEL_STEP_S"

BANDWIDTH_GBPS = 4000.0   # model copy bandwidth, bytes read + written per second / 1e9
RATE_GFLOPS = 60000.0     # model FP32 rate
OVERHEAD_US = 2.0         # model launch overhead per timed launch
BLOCK_US = 2e-5           # model cost of scheduling one block
BASE_ACCESS = 0.55        # share of the bandwidth a kernel with none of FEATURES reaches
MAX_ACCESS = 0.95
FAST_MATH = 1.3
CI_HALF = 0.005           # the speedup's interval: value * (1 -+ CI_HALF)
REGISTERS = 16
FEATURE_REGISTERS = 4

MODEL_DEVICE = DeviceInfo(
    name="model GPU (not a measurement)", compute_capability=(9, 0), sm_count=132,
    l2_bytes=50 * 1024 * 1024, max_threads_per_block=1024, max_shared_bytes_per_block=232448,
    sm_clock_mhz=1980, memory_clock_mhz=3201, driver_version="model (no driver)",
    cuda_driver_api=13000, copy_bandwidth_gbps=BANDWIDTH_GBPS)


@dataclass(frozen=True)
class Feature:
    """A structural trait of a variant's source: ``pattern`` (a regular expression over the
    source) and the factor it multiplies the access efficiency by."""

    name: str
    pattern: str
    factor: float


FEATURES = (
    Feature("restrict pointers", r"__restrict__", 1.04),
    Feature("4-wide vector loads", r"\b(?:float4|int4|uint4|double2)\b", 1.12),
    Feature("2-wide vector loads", r"\b(?:float2|int2|uint2)\b", 1.06),
    Feature("shared-memory staging", r"__shared__", 1.6),
    Feature("grid-stride loop", r"gridDim\.[xyz]\s*\*|\*\s*gridDim\.[xyz]", 1.03),
    Feature("unrolled loop", r"#pragma\s+unroll", 1.02),
    Feature("warp shuffles", r"__shfl", 1.08),
    Feature("launch bounds", r"__launch_bounds__", 1.01),
)


def features(variant: Variant) -> tuple[Feature, ...]:
    """The ``FEATURES`` found in ``variant``'s source, in ``FEATURES`` order."""
    return tuple(f for f in FEATURES if re.search(f.pattern, variant.source))


def access_factor(variant: Variant) -> float:
    """``BASE_ACCESS`` times the factors of the variant's features, capped at ``MAX_ACCESS``."""
    return min(MAX_ACCESS, BASE_ACCESS * math.prod(f.factor for f in features(variant)))


def launch_factor(launch: Launch, device: DeviceInfo = MODEL_DEVICE) -> float:
    """In (0, 1]: theoretical occupancy (resident warps of 64, at most 32 blocks per SM, no
    register or shared-memory limit), closeness of the block to 256 threads, and how full the
    last wave of blocks is.

    Raises:
        ValueError: a block of no threads or more than the device allows.
    """
    threads = math.prod(launch.block)
    if not 0 < threads <= device.max_threads_per_block:
        raise ValueError(f"expected 1 to {device.max_threads_per_block} threads per block, "
                         f"found {launch.block}")
    warps = -(-threads // 32)
    per_sm = max(1, min(32, 64 // warps))
    occupancy = per_sm * warps / 64
    shape = 1.0 - 0.02 * abs(math.log2(threads / 256))
    blocks = math.prod(launch.grid)
    slots = per_sm * device.sm_count
    waves = -(-blocks // slots)
    fill = blocks / (waves * slots)
    return (0.6 + 0.4 * min(occupancy, 1.0)) * shape * (0.9 + 0.1 * fill)


def model_time_us(problem: Problem, variant: Variant, device: DeviceInfo = MODEL_DEVICE) -> float:
    """The model's median time of ``variant`` on ``problem``'s first case (module doc), in
    microseconds.

    Raises:
        ValueError: the variant has no launch, or ``launch_factor`` refuses its block.
    """
    if not variant.launches:
        raise ValueError(f"variant {variant.label!r} has no launch for case "
                         f"{problem.cases[0].label!r}")
    case, launch = problem.cases[0], variant.launches[0]
    speed = launch_factor(launch, device)
    memory = case.bytes_moved / (device.copy_bandwidth_gbps * 1e3 * access_factor(variant) * speed)
    compute_rate = FAST_MATH if "-use_fast_math" in variant.options else 1.0
    compute = case.flops / (RATE_GFLOPS * 1e3 * compute_rate * speed)
    return OVERHEAD_US + BLOCK_US * math.prod(launch.grid) + max(memory, compute)


def model_timing(problem: Problem, variant: Variant, label: str, samples: int,
                 device: DeviceInfo = MODEL_DEVICE) -> Timing:
    """``model_time_us`` as a ``Timing`` (quartiles at -+0.5%, minimum at -1%)."""
    median = model_time_us(problem, variant, device)
    case = problem.cases[0]
    gbps = case.bytes_moved / (median * 1e3)
    return Timing(variant=label, median_us=median, q1_us=median * 0.995, q3_us=median * 1.005,
                  min_us=median * 0.99, samples=samples, achieved_gbps=gbps,
                  percent_of_copy=gbps / device.copy_bandwidth_gbps * 100,
                  gflops=case.flops / (median * 1e3), stop_reason="repetitions",
                  clock_source="unknown: model runner, nothing was run")


def model_compile(variant: Variant, label: str) -> CompileReport:
    return CompileReport(variant=label, ok=True,
                         registers=REGISTERS + FEATURE_REGISTERS * len(features(variant)),
                         max_threads_per_block=MODEL_DEVICE.max_threads_per_block)


def model_verdict(variant: Variant, label: str) -> Verdict:
    found = ", ".join(f.name for f in features(variant)) or "none of the modelled features"
    return Verdict(label, "passed", f"model verdict, not a measurement: nothing was compiled "
                                    f"or run (features: {found})")


class ModelRunnerClient(WithoutTools):
    """A ``cudalens.engine.runner.Runner`` (``device_info``, ``evaluate``, ``provenance``; no
    profiles or sanitizer runs) answered by the model (module doc). ``step_s``: seconds slept after each event; ``scripted``:
    test-only verdicts for candidates carrying a marker."""

    where = "the model runner"
    provenance = ("model runner (tests/data/lsp/model_runner.py): times computed from the bytes "
                  "moved and the candidate's source features; not measured on any GPU")

    def __init__(self, step_s: float = 0.0, scripted: Optional[ScriptedVerdicts] = None):
        self.step_s = step_s
        self.scripted = scripted
        if scripted is not None:
            self.provenance = (f"{ModelRunnerClient.provenance}; test-only candidates get "
                               f"scripted verdicts from {scripted.path.name}")

    def device_info(self) -> DeviceInfo:
        return MODEL_DEVICE

    def evaluate(self, problem: Problem, baseline: Variant, candidates: Sequence[Variant], *,
                 repetitions: int = 50, warmup: int = 3, time_budget_s: float = 60.0,
                 on_event: Optional[Callable[[object], None]] = None) -> Evaluation:
        """The model's ``Evaluation`` of ``candidates`` against ``baseline``, with the real
        runner's events (``Compiling``, ``Verifying``, ``TimingRound`` of
        ``gpu_runner.events``); ``warmup`` and ``time_budget_s`` change nothing."""
        say = on_event or (lambda _e: None)
        case, seed = problem.cases[0].label, problem.seeds[0]
        for v in (baseline, *candidates):
            self._step(say, Compiling(v.label))
        self._step(say, Verifying(baseline.label, case, seed, baseline=True))
        base = model_timing(problem, baseline, baseline.label, repetitions)
        results = []
        for v in candidates:
            self._step(say, Verifying(v.label, case, seed))
            entry = self.scripted.find(v) if self.scripted is not None else None
            if entry is not None:
                results.append(entry.result(v.label, base, problem))
                continue
            timing = model_timing(problem, v, v.label, repetitions)
            value = base.median_us / timing.median_us
            results.append(CandidateResult(
                compile=model_compile(v, v.label), verdict=model_verdict(v, v.label),
                timing=timing,
                speedup=Speedup(value, value * (1 - CI_HALF), value * (1 + CI_HALF))))
        for r in range(0, repetitions, max(repetitions // 5, 1)):
            self._step(say, TimingRound(r + 1, repetitions))
        return Evaluation(device=MODEL_DEVICE,
                          baseline_compile=model_compile(baseline, baseline.label),
                          baseline=base, candidates=tuple(results))

    def _step(self, say: Callable[[object], None], message: object) -> None:
        say(message)
        if self.step_s:
            time.sleep(self.step_s)


class ModelBackend:
    """The model as a worker ``Backend`` (``gpu_runner.workers.backend``), for a live runner
    service without a GPU: ``WorkerConfig(factory=ModelBackend)``."""

    def __init__(self, config=None):
        self.config = config
        scripted = os.environ.get(SCRIPTED_ENV)
        self._client = ModelRunnerClient(
            scripted=ScriptedVerdicts(Path(scripted)) if scripted else None)

    def device_info(self) -> DeviceInfo:
        return MODEL_DEVICE

    def device_count(self) -> int:
        return 1

    def compile(self, variants: Sequence[Variant]) -> list[CompileReport]:
        return [model_compile(v, v.label) for v in variants]

    def evaluate(self, task, on_event: Callable[[object], None]) -> Evaluation:
        spec = task.spec
        return self._client.evaluate(spec.problem, spec.baseline, spec.candidates,
                                     repetitions=spec.repetitions, on_event=on_event)

    def wedged(self) -> str:
        return ""

    def close(self) -> None:
        pass


# When set: a file that gets one line per runner the factory makes (tests that must see no
# runner started, e.g. for a kernel that does not compile)
MADE_LOG_ENV = "CUDALENS_TEST_RUNNERS_MADE"


def make_client(settings=None) -> ModelRunnerClient:
    """The runner factory for ``cudalens lsp --runner-factory model_runner:make_client``."""
    log = os.environ.get(MADE_LOG_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write("runner made\n")
    scripted = os.environ.get(SCRIPTED_ENV)
    return ModelRunnerClient(step_s=float(os.environ.get(STEP_ENV, "0")),
                             scripted=ScriptedVerdicts(Path(scripted)) if scripted else None)
