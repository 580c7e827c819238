"""Turning an ``OptimizeResult`` (the optimize flow's answer) into a ``RunRecord`` to store."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from cudalens.optimize import OptimizeResult
from cudalens.store.keys import sha256_text
from cudalens.store.records import (BASELINE, CandidateRecord, LaunchRecord, RunRecord,
                                    candidate_id)
from gpu_runner.problem import Variant


def launch_record(launch) -> LaunchRecord:
    """A ``cudalens.spec.model.LaunchDecl`` without its spec line."""
    return LaunchRecord(block=tuple(launch.block), grid=tuple(launch.grid), shared=launch.shared)


def run_record(result: OptimizeResult, *, key: str, provenance: str, created: str,
               budget: int = 0, seed: int = 0) -> RunRecord:
    """The record of ``result`` under ``key``.

    ``provenance`` says where the numbers come from; ``created`` is an ISO 8601 UTC time. The
    device is the one the evaluation reports (its copy bandwidth is what the timings' shares
    of copy bandwidth were computed against).
    The baseline's launch (threads per block, dynamic shared memory) is that of the timed case.
    """
    target = result.target
    problem = result.problem
    case = problem.timed_case
    candidates = []
    for row in result.rows:
        launch = launch_record(row.candidate.launch)
        candidates.append(CandidateRecord(
            id=candidate_id(row.candidate.source, launch), label=row.candidate.label,
            explanation=row.candidate.explanation, passes=tuple(row.candidate.passes),
            launch=launch, source=row.candidate.source, result=row.result,
            launch_changed=row.launch_change is not None,
            drop_in=(row.drop_in.result if row.launch_change is not None and row.drop_in
                     else None)))
    baseline_launch = _baseline_launch(result)
    return RunRecord(
        key=key, path=str(Path(target.path).resolve()), kernel=target.kernel.qualified_name,
        base_sha=sha256_text(target.text), device=result.evaluation.device,
        baseline=result.evaluation.baseline, baseline_compile=result.evaluation.baseline_compile,
        bytes_moved=case.bytes_moved, flops=case.flops,
        threads_per_block=baseline_launch[0], shared_bytes=baseline_launch[1],
        spec_origin=target.spec_origin, provenance=provenance, created=created,
        candidates=tuple(candidates), budget=budget, seed=seed, sanitizer=result.sanitizer)


def _baseline_launch(result: OptimizeResult) -> tuple[int, int]:
    """(threads per block, dynamic shared bytes) of the baseline's timed launch, resolved
    from the spec with the device's SM count; (0, 0) when it cannot be resolved."""
    from cudalens.spec.resolve import resolve_launch, sizes_for
    from cudalens.spec.errors import SpecError

    spec = result.target.spec
    try:
        launch = resolve_launch(spec.launch, sizes_for(spec, "nominal"),
                                result.evaluation.device.sm_count)
    except (SpecError, ValueError, KeyError):
        return 0, 0
    return launch.threads_per_block, launch.shared_bytes


def profile_subject(result: OptimizeResult) -> Optional[tuple[str, str, Variant]]:
    """What to profile after ``result``: its winner, else the baseline, as (``RunProfile.
    subject``: the candidate's id or ``BASELINE``, the candidate's label as the record shows
    it, the runner variant exactly as the optimize flow sent it). The variant is the one the
    flow built (``Row.variant``, ``OptimizeResult.baseline``); only a result that did not keep
    it (the LLM agent's) has it built again here. None when it cannot be built (its launch
    does not resolve against the spec, its build cannot be read)."""
    from cudalens.spec.resolve import build_variant

    from cudalens.build import build_for, request_files
    from cudalens.errors import CudalensError

    if result.winner is None and result.baseline is not None:
        return BASELINE, BASELINE, result.baseline
    if result.winner is not None and result.winner.variant is not None:
        c = result.winner.candidate
        return (candidate_id(c.source, launch_record(c.launch)), c.label, result.winner.variant)
    target = result.target
    name, spec, sms = target.kernel.qualified_name, target.spec, result.device.sm_count
    try:
        build = request_files(target.path, target.text, build_for(target.path))
        if result.winner is None:
            return BASELINE, BASELINE, build_variant(BASELINE, target.text, name, spec,
                                                     spec.launch, sms, options=build.options,
                                                     files=build.files,
                                                     source_path=build.source_path)
        c = result.winner.candidate
        sent = result.winner.result.verdict.variant or "winner"
        return (candidate_id(c.source, launch_record(c.launch)), c.label,
                build_variant(sent, c.source, name, spec, c.launch, sms,
                              options=(*build.options, *c.options), files=build.files,
                              source_path=build.source_path))
    except (CudalensError, ValueError, KeyError):
        return None
