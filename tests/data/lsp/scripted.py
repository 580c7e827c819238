"""Scripted verdicts (TEST-ONLY, not measurements) for candidates a test wrote itself.

The LLM proposer's candidates are written by a test's scripted model, so neither the model
runner (``model_runner.py``) nor a recording should judge them: a test names a JSON file in
``CUDALENS_REPLAY_SCRIPTED`` (``{"candidates": [entry, ...]}``); a candidate variant whose
source contains one of its markers (a comment such as ``// cudalens-test-candidate: good``)
gets that entry's scripted verdict and speedup, its timing being the baseline's divided by
the scripted speedup. Every such verdict's reason says "scripted test verdict, not a
measurement".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from gpu_runner.problem import Problem, Variant
from gpu_runner.report import CandidateResult, CompileReport, Mismatch, Speedup, Timing, Verdict

ENV = "CUDALENS_REPLAY_SCRIPTED"


class ScriptedEntry:
    """One scripted verdict (TEST-ONLY, not a measurement). JSON fields: ``marker`` (text the
    candidate's source must contain), ``status`` (``passed``, ``mismatch`` or
    ``compile_error``), ``speedup`` ``[value, ci_low, ci_high]`` (passed), ``mismatch``
    ``{buffer, index, expected, actual, mismatched, total}`` (mismatch), ``log`` (compile
    error), ``registers`` (optional).

    Raises:
        ValueError: ``marker`` or ``status`` missing, or an unknown status (names ``where``).
    """

    def __init__(self, d: dict, where: str):
        missing = [k for k in ("marker", "status") if k not in d]
        if missing or d["status"] not in ("passed", "mismatch", "compile_error"):
            raise ValueError(f"{where}: expected marker and status (passed, mismatch or "
                             f"compile_error), found {d!r}")
        self.d = d

    @property
    def marker(self) -> str:
        return self.d["marker"]

    def result(self, label: str, baseline: Optional[Timing], problem: Problem) -> CandidateResult:
        """The scripted result for the variant ``label``; a passed one is timed at
        ``baseline`` (microseconds) over the scripted speedup (no timing without a baseline)."""
        d = self.d
        why = f"scripted test verdict, not a measurement (marker {d['marker']!r})"
        ok = d["status"] != "compile_error"
        compile_ = CompileReport(variant=label, ok=ok, registers=int(d.get("registers", 0)),
                                 log="" if ok else d.get("log", ""))
        if d["status"] == "compile_error":
            return CandidateResult(compile_, Verdict(label, "compile_error", why))
        if d["status"] == "mismatch":
            m = Mismatch(case=problem.cases[0].label, seed=problem.seeds[0], **d["mismatch"])
            return CandidateResult(compile_, Verdict(label, "mismatch", why, m))
        value, low, high = d["speedup"]
        timing = None
        if baseline is not None:
            timing = Timing(variant=label, median_us=baseline.median_us / value,
                            q1_us=baseline.q1_us / value, q3_us=baseline.q3_us / value,
                            min_us=baseline.min_us / value, samples=baseline.samples,
                            achieved_gbps=baseline.achieved_gbps * value,
                            percent_of_copy=baseline.percent_of_copy * value,
                            gflops=baseline.gflops * value)
        return CandidateResult(compile_, Verdict(label, "passed", why), timing,
                               Speedup(value, low, high))


class ScriptedVerdicts:
    """The scripted verdicts file (``{"candidates": [entry, ...]}``; see ``ScriptedEntry``).

    Raises:
        OSError, json.JSONDecodeError: the file cannot be read as JSON.
        ValueError: an entry is malformed (``ScriptedEntry``).
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        data = json.loads(self.path.read_text(encoding="utf-8"))
        self.entries = [ScriptedEntry(d, f"{self.path}: candidates[{i}]")
                        for i, d in enumerate(data["candidates"])]

    def find(self, variant: Variant) -> Optional[ScriptedEntry]:
        return next((e for e in self.entries if e.marker in variant.source), None)
