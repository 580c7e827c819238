"""A stand-in for the runner client in agent tests, and a small target to optimize.

``FakeRunner(judge)`` answers ``device_info`` with H200-like facts and ``evaluate`` with one
``CandidateResult`` per candidate from ``judge(variant)``; the baseline takes 100 us. Every
evaluate call is recorded (``calls``: the candidate variants of each batch).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from gpu_runner.events import Note
from gpu_runner.problem import Variant
from gpu_runner.report import (CandidateResult, CompileReport, DeviceInfo, Evaluation, Mismatch,
                               Speedup, Timing, Verdict)
from cudalens.engine.runner import WithoutTools
from cudalens.target import Target, load_target

BASELINE_US = 100.0
DEVICE = DeviceInfo(name="Fake H200", compute_capability=(9, 0), sm_count=132,
                    l2_bytes=60 << 20, max_threads_per_block=1024,
                    max_shared_bytes_per_block=48 << 10, sm_clock_mhz=1980,
                    memory_clock_mhz=3201, driver_version="580.00", cuda_driver_api=13000,
                    copy_bandwidth_gbps=4000.0)

SAXPY = """// saxpy for the agent tests
#include <cuda_runtime.h>

__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}

void launch_saxpy(int n, float a, const float* x, float* y)
{
    saxpy<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
"""
SAXPY_SPEC = """kernel saxpy
size n = 1 << 20
scalar n: int = n
scalar a: float = 2.5
in x: float[n]
inout y: float[n]
block = 256
grid = ceil_div(n, block.x)
flops = 2 * n
"""


def saxpy_target(folder: Path) -> Target:
    path = folder / "saxpy.cu"
    path.write_text(SAXPY, encoding="utf-8")
    (folder / "saxpy.cu.spec").write_text(SAXPY_SPEC, encoding="utf-8")
    return load_target(path)


def timing(label: str, us: float) -> Timing:
    gbps = 12 * (1 << 20) / (us * 1e3)
    return Timing(variant=label, median_us=us, q1_us=us * 0.98, q3_us=us * 1.02, min_us=us * 0.95,
                  samples=50, achieved_gbps=gbps, percent_of_copy=100 * gbps / 4000.0,
                  gflops=2 * (1 << 20) / (us * 1e3))


def passed(label: str, speedup: float, registers: int = 20) -> CandidateResult:
    return CandidateResult(
        compile=CompileReport(label, True, registers=registers),
        verdict=Verdict(label, "passed", "matches the baseline on every case and seed, twice"),
        timing=timing(label, BASELINE_US / speedup),
        speedup=Speedup(speedup, speedup * 0.97, speedup * 1.03))


def mismatched(label: str, index: int = 7, expected: float = 1.5,
               actual: float = 2.25) -> CandidateResult:
    m = Mismatch(case="ragged", seed=2, buffer="y", index=index, expected=expected, actual=actual,
                 mismatched=629145, total=629145)
    return CandidateResult(
        compile=CompileReport(label, True, registers=20),
        verdict=Verdict(label, "mismatch", f"{label}: y differs at index {index}", m))


def compile_failed(label: str, log: str) -> CandidateResult:
    return CandidateResult(compile=CompileReport(label, False, log=log),
                           verdict=Verdict(label, "compile_error", f"{label} did not compile"))


Judge = Callable[[Variant], CandidateResult]


class FakeRunner(WithoutTools):
    """See the module doc."""

    def __init__(self, judge: Optional[Judge] = None) -> None:
        self.judge = judge or (lambda v: passed(v.label, 1.0))
        self.calls: list[list[Variant]] = []

    def device_info(self) -> DeviceInfo:
        return DEVICE

    def evaluate(self, problem, baseline, candidates, *, repetitions=50, on_event=None):
        self.calls.append(list(candidates))
        if on_event is not None:
            on_event(Note(f"timing {len(candidates)} candidates"))
        return Evaluation(device=DEVICE,
                          baseline_compile=CompileReport("baseline", True, registers=16),
                          baseline=timing("baseline", BASELINE_US),
                          candidates=tuple(self.judge(v) for v in candidates))


def by_text(rules: list[tuple[str, Callable[[str], CandidateResult]]],
            default: Callable[[str], CandidateResult] = lambda label: passed(label, 1.0)) -> Judge:
    """A judge picking the first rule whose text occurs in the variant's source."""
    def judge(v: Variant) -> CandidateResult:
        for text, make in rules:
            if text in v.source:
                return make(v.label)
        return default(v.label)
    return judge
