"""Putting one evaluation's results together when its candidates ran in several workers.

A worker whose GPU context got wedged (a kernel fault or a hung kernel, see
``gpu_runner.session``) reports the candidate that did it for what it did, and the others it
could not finish as *displaced*: verdicts marked ``Verdict.not_judged`` (written by
``gpu_runner.verify``) and verified candidates left untimed because timing stopped. Displaced candidates are evaluated again in a fresh worker; only a worker's own
crash or silence is turned into a verdict here (``crashed``, ``hung``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Mapping, Optional, Sequence

from gpu_runner.problem import Variant
from gpu_runner.report import (CandidateResult, CompileReport, DeviceInfo, Evaluation, Timing,
                               Verdict)

def displaced(result: CandidateResult, wedged: bool) -> bool:
    """Whether ``result`` says nothing about the candidate itself because another kernel
    wedged the worker (only possible when ``wedged``)."""
    if not wedged:
        return False
    v = result.verdict
    if v.not_judged:
        return True
    return v.status == "passed" and result.timing is None


def unknown_compile(label: str, why: str) -> CompileReport:
    return CompileReport(variant=label, ok=False,
                         log=f"no compile report: the worker process ended before reporting "
                             f"({why})")


def crashed(variant: Variant, why: str) -> CandidateResult:
    """``launch_error`` for a candidate that, evaluated alone, killed its worker process."""
    return CandidateResult(
        compile=unknown_compile(variant.label, why),
        verdict=Verdict(variant=variant.label, status="launch_error",
                        reason=f"evaluated alone, {variant.label} made the GPU worker process "
                               f"die: {why}; the worker was replaced"))


def hung(variant: Variant, why: str, kernel_timeout_s: float) -> CandidateResult:
    """``timeout`` for a candidate that, evaluated alone, left its worker silent too long."""
    return CandidateResult(
        compile=unknown_compile(variant.label, why),
        verdict=Verdict(variant=variant.label, status="timeout",
                        reason=f"evaluated alone, {variant.label} stopped the GPU worker: {why} "
                               f"(kernel time limit {kernel_timeout_s:g} s); the worker was "
                               f"killed and replaced"))


def rebase_timing(timing: Optional[Timing], info: DeviceInfo) -> Optional[Timing]:
    """``timing`` with ``percent_of_copy`` against ``info``'s copy bandwidth: each fresh worker
    measures the copy bandwidth anew, and one evaluation must use one reference."""
    if timing is None or info.copy_bandwidth_gbps <= 0:
        return timing
    return replace(timing, percent_of_copy=timing.achieved_gbps / info.copy_bandwidth_gbps * 100)


def assemble(info: DeviceInfo, baseline_compile: CompileReport, baseline: Optional[Timing],
             order: Sequence[Variant], results: Mapping[str, CandidateResult],
             errors: Iterable[str] = ()) -> Evaluation:
    """The evaluation of ``order``'s candidates, in that order, from ``results`` by label.

    Raises ``KeyError`` naming a candidate without a result."""
    missing = [v.label for v in order if v.label not in results]
    if missing:
        raise KeyError(f"no result for candidate(s) {', '.join(missing)}")
    out = []
    for v in order:
        r = results[v.label]
        out.append(replace(r, timing=rebase_timing(r.timing, info)))
    unique = list(dict.fromkeys(e for e in errors if e))
    return Evaluation(device=info, baseline_compile=baseline_compile,
                      baseline=rebase_timing(baseline, info), candidates=tuple(out),
                      error="; ".join(unique))
