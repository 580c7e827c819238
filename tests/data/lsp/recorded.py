"""Run records for unit tests, from the numbers recorded on the H200 and sources the test
chooses.

The store and edit tests need realistic records but not the optimizer: the verdicts, timings
and speedups come from ``benchmarks/results/h200-examples-2026-11-29-0295825.json`` (real
measurements), each attached to the candidate with the recorded label, while the candidate
sources are given by the test (the recording holds none). Nothing here is a measurement of
those sources; the records only exercise keys, storage, offers, rejections and edits.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

from gpu_runner.report import CandidateResult, CompileReport, DeviceInfo, Speedup, Timing, Verdict
from cudalens.store.records import CandidateRecord, LaunchRecord, RunRecord, candidate_id
from cudalens.store.keys import sha256_text

ROOT = Path(__file__).absolute().parents[3]
RECORDING = ROOT / "benchmarks" / "results" / "h200-examples-2026-11-29-0295825.json"


def recorded_run(kernel: str) -> dict:
    data = json.loads(RECORDING.read_text(encoding="utf-8"))
    return next(r for r in data["runs"] if r.get("kernel") == kernel)


def _device(data: dict) -> DeviceInfo:
    d = dict(data["device"])
    d["compute_capability"] = tuple(d["compute_capability"])
    return DeviceInfo(**d)


def _result(rec: dict) -> CandidateResult:
    return CandidateResult(
        compile=CompileReport(**{"log": "", **rec["compile"]}),
        verdict=Verdict(**{**rec["verdict"], "mismatch": None}),
        timing=Timing(**rec["timing"]) if rec["timing"] else None,
        speedup=Speedup(**rec["speedup"]) if rec["speedup"] else None)


def record(kernel: str, key: str, path: str, base_text: str,
           sources: Mapping[str, str]) -> RunRecord:
    """A ``RunRecord`` of ``kernel`` under ``key``: the recorded baseline, and one candidate per
    label in ``sources`` (label -> the source to attach) with its recorded results."""
    data = json.loads(RECORDING.read_text(encoding="utf-8"))
    run = next(r for r in data["runs"] if r.get("kernel") == kernel)
    by_label = {c["label"]: c for c in run["candidates"]}
    candidates = []
    for label, source in sources.items():
        rec = by_label[label]
        launch = LaunchRecord(block=tuple(rec["launch"]["block"]),
                              grid=tuple(rec["launch"]["grid"]), shared=rec["launch"]["shared"])
        candidates.append(CandidateRecord(
            id=candidate_id(source, launch), label=label, explanation=rec["explanation"],
            passes=tuple(rec["passes"]), launch=launch, source=source, result=_result(rec)))
    return RunRecord(
        key=key, path=path, kernel=kernel, base_sha=sha256_text(base_text), device=_device(data),
        baseline=Timing(**run["baseline"]),
        baseline_compile=CompileReport(**{"log": "", **run["baseline_compile"]}),
        bytes_moved=0, flops=0, threads_per_block=256, shared_bytes=0, spec_origin=run["spec"],
        provenance=f"recorded in {RECORDING.name}", created=data["date"],
        candidates=tuple(candidates), budget=data["settings"]["budget"], seed=0)
