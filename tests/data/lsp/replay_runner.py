"""A runner client that answers from results recorded on a real H200 (GPU-free rendering of
recorded numbers). CI's language-server tests do NOT use it: they use the deterministic model
runner (``model_runner.py``), which accepts any change to the search; this replay serves
``tests/test_lsp_replay.py`` (the recordings' own consistency) and
``benchmarks/replay_coverage.py`` (a report of whether the recordings still cover today's
search).

What is replayed, and how it stays honest:

* The numbers come from ``benchmarks/results/h200-examples-*.json``, written by
  ``benchmarks/run_examples.py`` during a real run of ``cudalens optimize`` on every example
  on an NVIDIA H200 (each file records the device, driver, commit and date). Nothing here is
  typed in by hand.
* Each run in those files holds every runner evaluation the optimizer made (its batches and
  the final confirmation) with each variant's exact source, launches and nvcc options, and
  what the runner found for it. ``evaluate`` answers only a request it can match exactly: the
  problem must equal the one the example's spec gives, the baseline must be the example's
  source with the spec's launch, and the candidate variants must be, in order, those of one
  recorded evaluation (same sources, launches and options; labels may differ). The search is
  deterministic given the runner's answers, so a search replayed against them asks the same
  questions in the same order. Anything else raises ``ReplayMismatch`` naming what differs,
  instead of inventing a number.

* Several recordings may exist; ``evaluate`` answers from the newest one that recorded the
  kernel and every requested candidate.

**Scripted verdicts (test-only, NOT recordings)**: with ``scripted`` (``scripted.py``), a
request made only of candidates carrying a scripted marker gets their scripted verdicts, timed
against the recorded baseline.

``make_client(settings)`` is a runner factory (``--runner-factory replay_runner:make_client``).
Environment: ``CUDALENS_REPLAY_FILE`` picks one recorded file (default: all of
``benchmarks/results/h200-examples-*.json``); ``CUDALENS_REPLAY_SCRIPTED`` names a file of
scripted verdicts; ``CUDALENS_REPLAY_STEP_S`` sleeps that many seconds between progress
messages.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

from gpu_runner.events import Compiling, TimingRound, Verifying
from gpu_runner.problem import Problem, Variant
from gpu_runner.report import (CandidateResult, CompileReport, DeviceInfo, Evaluation, Speedup,
                               Timing, Verdict)
from cudalens.engine.runner import WithoutTools
from cudalens.spec.resolve import build_problem, build_variant
from cudalens.target import load_target

from scripted import ScriptedVerdicts

ROOT = Path(__file__).absolute().parents[3]
RESULTS = ROOT / "benchmarks" / "results"


class ReplayMismatch(RuntimeError):
    """The request is not one the recorded run answered; the message says what differs."""


def _timing(d: Optional[dict], label: str) -> Optional[Timing]:
    return None if d is None else Timing(**{**d, "variant": label})


def _compile(d: dict, label: str) -> CompileReport:
    return CompileReport(**{"log": "", **d, "variant": label})


def recorded_files() -> list[Path]:
    """The recorded example runs, newest first (by the date each file records)."""
    files = sorted(RESULTS.glob("h200-examples-*.json"))
    return sorted(files, key=lambda f: json.loads(f.read_text(encoding="utf-8"))["date"],
                  reverse=True)


class Recording:
    """One results file of ``benchmarks/run_examples.py``."""

    def __init__(self, path: Path):
        self.path = path
        self.data = json.loads(path.read_text(encoding="utf-8"))
        rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        self.provenance = (f"replay of {rel}: recorded on {self.data['device']['name']} at "
                           f"commit {self.data['commit'][:10]} on {self.data['date'][:10]}")

    def device(self, run: Optional[dict] = None) -> DeviceInfo:
        """The recorded device. With ``run``: its copy bandwidth is the one that run's
        percentages were computed against (achieved / percent, both recorded), since each
        optimize process measured its own."""
        d = dict(self.data["device"])
        d["compute_capability"] = tuple(d["compute_capability"])
        base = (run or {}).get("baseline")
        if base and base["percent_of_copy"] > 0:
            d["copy_bandwidth_gbps"] = base["achieved_gbps"] * 100.0 / base["percent_of_copy"]
        return DeviceInfo(**d)

    def run(self, kernel: str) -> Optional[dict]:
        return next((r for r in self.data["runs"] if r.get("kernel") == kernel), None)

    def answer(self, problem: Problem, baseline: Variant, candidates: Sequence[Variant]
               ) -> tuple[dict, dict, list[tuple[Variant, dict]]]:
        """The recorded run, the recorded evaluation that asked exactly this, and for each
        variant its recorded result.

        Raises:
            ReplayMismatch: see the module doc.
        """
        run = self.run(problem.kernel)
        if run is None:
            raise ReplayMismatch(f"{self.path.name} recorded no run of kernel {problem.kernel!r}")
        if "evaluations" not in run:
            raise ReplayMismatch(f"{self.path.name} (commit {self.data['commit'][:10]}) holds no "
                                 f"per-evaluation sources for {problem.kernel}: it predates exact "
                                 f"replay; record the examples again on a GPU "
                                 f"(benchmarks/run_examples.py)")
        target = load_target(ROOT / run["file"], run["kernel"])
        device = self.device()
        if problem != build_problem(target.spec, target.kernel):
            raise ReplayMismatch(f"the problem for {problem.kernel} differs from the one recorded "
                                 f"with {run['spec']} (sizes, arguments or tolerance)")
        own_base = build_variant("baseline", target.text, target.kernel.qualified_name,
                                 target.spec, target.spec.launch, device.sm_count)
        if (baseline.source, baseline.launches) != (own_base.source, own_base.launches):
            raise ReplayMismatch(f"the baseline differs from {run['file']} as recorded in "
                                 f"{self.path.name}: the recorded numbers do not apply to it")
        asked = [_identity(v) for v in candidates]
        for ev in run["evaluations"]:
            if [(r["source"], r["options"], r["launches"]) for r in ev["variants"]] == asked:
                return run, ev, list(zip(candidates, ev["variants"]))
        first = next((v.label for v, a in zip(candidates, asked)
                      if all(a != (r["source"], r["options"], r["launches"])
                             for ev in run["evaluations"] for r in ev["variants"])), None)
        what = (f"variant {first} was never measured" if first else
                "those variants were measured, but never together in one evaluation")
        raise ReplayMismatch(
            f"{self.path.name} (commit {self.data['commit'][:10]}) has no evaluation of "
            f"{run['kernel']} with these {len(candidates)} variants ({what}): the optimizer's "
            f"candidates changed since; record the examples again on a GPU "
            f"(benchmarks/run_examples.py)")


def _identity(v: Variant) -> tuple:
    """A variant as recorded: source, nvcc options and launches in JSON form."""
    launches = json.loads(json.dumps([dataclasses.asdict(x) for x in v.launches]))
    return (v.source, list(v.options), launches)


def newest_recording_of(kernel: str, paths: Optional[Sequence[Path]] = None
                        ) -> Optional[tuple[Recording, dict]]:
    """The newest recording that has a run of ``kernel``, with that run."""
    for path in (paths or recorded_files()):
        recording = Recording(Path(path))
        run = recording.run(kernel)
        if run is not None:
            return recording, run
    return None


@functools.lru_cache(maxsize=None)
def coverage_problem(kernel: str) -> Optional[str]:
    """None when the optimizer, run today on the recorded example with the recording's budget
    and seed 0, asks only questions the newest recording of ``kernel`` answers; else why not,
    in words (``benchmarks/replay_coverage.py`` reports it; re-record on a GPU to close a
    gap). Cached: it runs the search."""
    from cudalens.optimize import optimize

    found = newest_recording_of(kernel)
    if found is None:
        return f"no recorded run of {kernel} in {RESULTS}"
    recording, run = found
    target = load_target(ROOT / run["file"], run["kernel"])
    try:
        optimize(target, ReplayRunnerClient([recording.path]),
                 budget=recording.data["settings"]["budget"], seed=0)
    except ReplayMismatch as exc:
        return f"the recorded H200 results cannot answer today's optimizer for {kernel}: {exc}"
    return None


class ReplayRunnerClient(WithoutTools):
    """``RunnerClient``'s API (``device_info``, ``evaluate``) over recorded results files.

    ``evaluate`` uses the newest recording that answers the whole request.
    """

    def __init__(self, paths: Optional[Sequence[Path]] = None, step_s: float = 0.0,
                 scripted: Optional["ScriptedVerdicts"] = None):
        self.recordings = [Recording(Path(p)) for p in (paths or recorded_files())]
        if not self.recordings:
            raise ReplayMismatch(f"no recorded results in {RESULTS}")
        self.step_s = step_s
        self.scripted = scripted
        self.provenance = self._provenance(self.recordings[0])

    def _provenance(self, recording: "Recording") -> str:
        if self.scripted is None:
            return recording.provenance
        return (f"{recording.provenance}; test-only candidates get scripted verdicts from "
                f"{self.scripted.path.name} (not measurements)")

    def device_info(self) -> DeviceInfo:
        return self.recordings[0].device()

    def evaluate(self, problem: Problem, baseline: Variant, candidates: Sequence[Variant], *,
                 repetitions: int = 50,
                 on_event: Optional[Callable[[object], None]] = None) -> Evaluation:
        say = on_event or (lambda _e: None)
        if self.scripted is not None and all(self.scripted.find(v) for v in candidates):
            return self._scripted_evaluation(problem, baseline, candidates, say)
        reasons = []
        for recording in self.recordings:
            try:
                run, ev, matched = recording.answer(problem, baseline, candidates)
            except ReplayMismatch as exc:
                reasons.append(str(exc))
                continue
            self.provenance = self._provenance(recording)
            return self._replay(recording, run, ev, matched, problem, repetitions, say)
        raise ReplayMismatch("; ".join(reasons))

    def _replay(self, recording: Recording, run: dict, ev: dict,
                matched: list[tuple[Variant, dict]],
                problem: Problem, repetitions: int, say: Callable[[object], None]) -> Evaluation:
        case, seed = problem.cases[0].label, problem.seeds[0]
        self._step(say, Compiling("baseline"))
        for v, _ in matched:
            self._step(say, Compiling(v.label))
        self._step(say, Verifying("baseline", case, seed, baseline=True))
        results = []
        for v, rec in matched:
            self._step(say, Verifying(v.label, case, seed))
            verdict = Verdict(**{**rec["verdict"], "variant": v.label, "mismatch": None})
            speedup = Speedup(**rec["speedup"]) if rec["speedup"] else None
            results.append(CandidateResult(compile=_compile(rec["compile"], v.label),
                                           verdict=verdict, timing=_timing(rec["timing"], v.label),
                                           speedup=speedup))
        rounds = ev["baseline"]["samples"] if ev["baseline"] else 0
        for r in range(0, rounds, max(rounds // 5, 1)):
            self._step(say, TimingRound(r + 1, repetitions))
        return Evaluation(device=recording.device(run),
                          baseline_compile=_compile(run["baseline_compile"], "baseline"),
                          baseline=_timing(ev["baseline"], "baseline"),
                          error=ev.get("error", ""),
                          candidates=tuple(results))

    def _scripted_evaluation(self, problem: Problem, baseline: Variant,
                             candidates: Sequence[Variant],
                             say: Callable[[object], None]) -> Evaluation:
        """A request made only of test-only candidates (or of none: the LLM proposer measures
        the original alone first). The baseline's timing is the recorded run's (a real H200
        measurement of exactly this baseline, checked like ``Recording.answer`` checks it);
        each candidate gets its scripted verdict (``ScriptedEntry``), not a measurement.

        Raises:
            ReplayMismatch: no recording of the kernel, or another problem or baseline.
        """
        found = newest_recording_of(problem.kernel, [r.path for r in self.recordings])
        if found is None:
            raise ReplayMismatch(f"no recorded run of kernel {problem.kernel!r} to take the "
                                 f"baseline's timing from")
        recording, run = found
        target = load_target(ROOT / run["file"], run["kernel"])
        device = recording.device(run)
        if problem != build_problem(target.spec, target.kernel):
            raise ReplayMismatch(f"the problem for {problem.kernel} differs from the one recorded "
                                 f"with {run['spec']} (sizes, arguments or tolerance)")
        own = build_variant("baseline", target.text, target.kernel.qualified_name, target.spec,
                            target.spec.launch, device.sm_count)
        if (baseline.source, baseline.launches) != (own.source, own.launches):
            raise ReplayMismatch(f"the baseline differs from {run['file']} as recorded in "
                                 f"{recording.path.name}: the recorded numbers do not apply to it")
        self.provenance = self._provenance(recording)
        case, seed = problem.cases[0].label, problem.seeds[0]
        for v in ["baseline", *(c.label for c in candidates)]:
            self._step(say, Compiling(v))
        base = _timing(run["baseline"], "baseline")
        results = []
        for v in candidates:
            self._step(say, Verifying(v.label, case, seed))
            results.append(self.scripted.find(v).result(v.label, base, problem))
        rounds = base.samples if base else 0
        for r in range(0, rounds, max(rounds // 5, 1)):
            self._step(say, TimingRound(r + 1, rounds))
        return Evaluation(device=device,
                          baseline_compile=_compile(run["baseline_compile"], "baseline"),
                          baseline=base, candidates=tuple(results))

    def _step(self, say: Callable[[object], None], message: object) -> None:
        say(message)
        if self.step_s:
            time.sleep(self.step_s)


def make_client(settings=None) -> ReplayRunnerClient:
    """The runner factory for ``cudalens lsp --runner-factory replay_runner:make_client``."""
    chosen = os.environ.get("CUDALENS_REPLAY_FILE")
    scripted = os.environ.get("CUDALENS_REPLAY_SCRIPTED")
    return ReplayRunnerClient([Path(chosen)] if chosen else None,
                              step_s=float(os.environ.get("CUDALENS_REPLAY_STEP_S", "0")),
                              scripted=ScriptedVerdicts(Path(scripted)) if scripted else None)
