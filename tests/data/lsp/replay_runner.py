"""A runner client for CI that answers from results recorded on a real H200.

What is replayed, and how it stays honest:

* The numbers come from ``benchmarks/results/h200-examples-*.json``, written by
  ``benchmarks/run_examples.py`` during a real run of ``cudalens optimize`` on every example
  on an NVIDIA H200 (each file records the device, driver, commit and date). Nothing here is
  typed in by hand.
* Those files hold each candidate's label, launch, verdict, timing and speedup, but not its
  source. The sources come from re-running the optimizer's deterministic search
  (``cudalens.optimizer.search.propose``, same budget, seed 0) on the same example file and
  spec: the search is a pure function of its inputs, so it yields the same candidates in the
  same order with the same labels (``tests/test_lsp_replay.py`` checks the labels, and that
  the recorded winner's diff is reproduced byte for byte).
* ``evaluate`` answers only a request it can match exactly: the problem must equal the one
  the example's spec gives, the baseline must be the example's source with the spec's launch,
  and every candidate variant must be one of the re-derived candidates (same source, same
  resolved launches). Each matched variant gets the recorded result of the candidate with the
  same label. Anything else raises ``ReplayMismatch`` naming what differs, instead of
  inventing a number.

* Several recordings may exist; ``evaluate`` answers from the newest one that recorded the
  kernel and every requested candidate.

``make_client(settings)`` is the runner factory the language server is started with in tests
(``--runner-factory replay_runner:make_client``). Environment: ``CUDALENS_REPLAY_FILE``
picks one recorded file (default: all of ``benchmarks/results/h200-examples-*.json``);
``CUDALENS_REPLAY_STEP_S`` sleeps that many seconds between progress messages, so a test
can cancel a run while it is in flight.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

from gpu_runner.problem import Problem, Variant
from gpu_runner.report import (CandidateResult, CompileReport, DeviceInfo, Evaluation, Speedup,
                               Timing, Verdict)
from cudalens.optimizer.context import make_context
from cudalens.optimizer.search import propose
from cudalens.spec.resolve import build_problem, build_variant
from cudalens.target import load_target

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
               ) -> tuple[dict, list[tuple[Variant, dict]]]:
        """The recorded run and, for each variant, its recorded candidate.

        Raises:
            ReplayMismatch: see the module doc.
        """
        run = self.run(problem.kernel)
        if run is None:
            raise ReplayMismatch(f"{self.path.name} recorded no run of kernel {problem.kernel!r}")
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
        ctx = make_context(target.text, str(target.path), target.kernel.name, target.spec)
        searched = propose(ctx, budget=self.data["settings"]["budget"], seed=0)
        labels = {}
        for i, cand in enumerate(searched):
            v = build_variant(f"c{i + 1}", cand.source, target.kernel.qualified_name, target.spec,
                              cand.launch, device.sm_count, options=cand.options)
            labels[(v.source, v.launches, v.options)] = cand.label
        recorded = {c["label"]: c for c in run["candidates"]}
        matched = []
        for v in candidates:
            label = labels.get((v.source, v.launches, v.options))
            rec = recorded.get(label) if label is not None else None
            if rec is None:
                raise ReplayMismatch(
                    f"variant {v.label} ({label or 'not derived by the search'}) of "
                    f"{run['kernel']} was not measured in {self.path.name}: the optimizer's "
                    f"candidates changed since commit {self.data['commit'][:10]}; record the "
                    f"examples again on a GPU (benchmarks/run_examples.py)")
            matched.append((v, rec))
        return run, matched


def newest_recording_of(kernel: str, paths: Optional[Sequence[Path]] = None
                        ) -> Optional[tuple[Recording, dict]]:
    """The newest recording that has a run of ``kernel``, with that run."""
    for path in (paths or recorded_files()):
        recording = Recording(Path(path))
        run = recording.run(kernel)
        if run is not None:
            return recording, run
    return None


def coverage_problem(kernel: str, budget: Optional[int] = None) -> Optional[str]:
    """None when the newest recording of ``kernel`` holds a result for every candidate the
    optimizer's search proposes today (seed 0, the recording's budget unless ``budget``);
    else why not, in words. Tests that optimize ``kernel`` through the replay skip with this
    reason; ``test_lsp_replay.py`` fails with it (re-record on a GPU)."""
    found = newest_recording_of(kernel)
    if found is None:
        return f"no recorded run of {kernel} in {RESULTS}"
    recording, run = found
    target = load_target(ROOT / run["file"], run["kernel"])
    ctx = make_context(target.text, str(target.path), target.kernel.name, target.spec)
    searched = propose(ctx, budget=budget or recording.data["settings"]["budget"], seed=0)
    recorded = {c["label"] for c in run["candidates"]}
    missing = [c.label for c in searched if c.label not in recorded]
    if missing:
        return (f"the recorded H200 results ({recording.path.name}, commit "
                f"{recording.data['commit'][:10]}) have no result for {len(missing)} of the "
                f"{len(searched)} candidates the optimizer now proposes for {kernel} (first: "
                f"{missing[0]!r}): record the examples again on a GPU with "
                f"benchmarks/run_examples.py")
    return None


class ReplayRunnerClient:
    """``RunnerClient``'s API (``device_info``, ``evaluate``) over recorded results files.

    ``evaluate`` uses the newest recording that answers the whole request.
    """

    def __init__(self, paths: Optional[Sequence[Path]] = None, step_s: float = 0.0):
        self.recordings = [Recording(Path(p)) for p in (paths or recorded_files())]
        if not self.recordings:
            raise ReplayMismatch(f"no recorded results in {RESULTS}")
        self.step_s = step_s
        self.provenance = self.recordings[0].provenance

    def device_info(self) -> DeviceInfo:
        return self.recordings[0].device()

    def evaluate(self, problem: Problem, baseline: Variant, candidates: Sequence[Variant], *,
                 repetitions: int = 50,
                 progress: Optional[Callable[[str], None]] = None) -> Evaluation:
        say = progress or (lambda _m: None)
        reasons = []
        for recording in self.recordings:
            try:
                run, matched = recording.answer(problem, baseline, candidates)
            except ReplayMismatch as exc:
                reasons.append(str(exc))
                continue
            self.provenance = recording.provenance
            return self._replay(recording, run, matched, problem, repetitions, say)
        raise ReplayMismatch("; ".join(reasons))

    def _replay(self, recording: Recording, run: dict, matched: list[tuple[Variant, dict]],
                problem: Problem, repetitions: int, say: Callable[[str], None]) -> Evaluation:
        case, seed = problem.cases[0].label, problem.seeds[0]
        self._step(say, "compile: baseline")
        for v, _ in matched:
            self._step(say, f"compile: {v.label}")
        self._step(say, f"verify: baseline on case '{case}', seed {seed}")
        results = []
        for v, rec in matched:
            self._step(say, f"verify: {v.label} on case '{case}', seed {seed}")
            verdict = Verdict(**{**rec["verdict"], "variant": v.label, "mismatch": None})
            speedup = Speedup(**rec["speedup"]) if rec["speedup"] else None
            results.append(CandidateResult(compile=_compile(rec["compile"], v.label),
                                           verdict=verdict, timing=_timing(rec["timing"], v.label),
                                           speedup=speedup))
        rounds = run["baseline"]["samples"] if run["baseline"] else 0
        for r in range(0, rounds, max(rounds // 5, 1)):
            self._step(say, f"timing: round {r + 1} of at most {repetitions}")
        return Evaluation(device=recording.device(run),
                          baseline_compile=_compile(run["baseline_compile"], "baseline"),
                          baseline=_timing(run["baseline"], "baseline"),
                          candidates=tuple(results))

    def _step(self, say: Callable[[str], None], message: str) -> None:
        say(message)
        if self.step_s:
            time.sleep(self.step_s)


def make_client(settings=None) -> ReplayRunnerClient:
    """The runner factory for ``cudalens lsp --runner-factory replay_runner:make_client``."""
    chosen = os.environ.get("CUDALENS_REPLAY_FILE")
    return ReplayRunnerClient([Path(chosen)] if chosen else None,
                              step_s=float(os.environ.get("CUDALENS_REPLAY_STEP_S", "0")))
