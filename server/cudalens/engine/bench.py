"""What a proposer needs to measure its candidates: the problem and baseline of a target built
once, candidates resolved into runner variants, a batch sent with its events, the
confirmation step, and the result with its winner.

A new proposer (docs/architecture.md, "How to add things: a proposer") makes a ``Bench``
with ``Bench.make(target, runner, on_event)``, sends its candidates with ``bench.measure``
(labels ``c1``, ``c2`` ... across batches; ``BatchStarted``, the runner's events and
``BatchDone`` go to ``on_event``), times the best of different batches again with
``bench.confirm`` and returns ``bench.result(...)`` in a ``Proposal``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from gpu_runner.problem import Problem, Variant
from gpu_runner.report import DeviceInfo, Evaluation
from cudalens.build import RequestFiles
from cudalens.engine.confirm import confirm, with_drop_in
from cudalens.engine.events import BatchDone, BatchStarted, OnEvent
from cudalens.optimize import OptimizeResult, Row, baseline_measured, pick_winner, prepare
from cudalens.optimizer.candidate import Candidate
from cudalens.spec.resolve import build_variant
from cudalens.target import Target

__all__ = ["Bench"]


@dataclass
class Bench:
    """One target on one runner: ``problem`` and ``baseline`` built once (the spec's launch,
    the project's headers and macros: ``build``), ``count`` candidates labelled so far."""

    target: Target
    runner: object
    on_event: OnEvent
    device: DeviceInfo
    problem: Problem
    baseline: Variant
    build: RequestFiles
    repetitions: int = 50
    count: int = 0
    batches: list[list[Row]] = field(default_factory=list)

    @classmethod
    def make(cls, target: Target, runner, on_event: OnEvent, repetitions: int = 50) -> "Bench":
        """Raises ``CudalensError`` when the spec cannot be resolved (its message names the
        spec's line) or the build cannot be read."""
        device, build, problem, baseline = prepare(target, runner)
        return cls(target, runner, on_event, device, problem, baseline, build, repetitions)

    def variant(self, label: str, candidate: Candidate, launch=None) -> Variant:
        """``candidate`` as a runner variant under ``launch`` (None: its own). Raises
        ``SpecError`` when that launch cannot run the spec's sizes."""
        return build_variant(label, candidate.source, self.target.kernel.qualified_name,
                             self.target.spec, launch or candidate.launch,
                             self.device.sm_count,
                             options=(*self.build.options, *candidate.options),
                             files=self.build.files,
                             source_path=self.build.source_path)

    def _evaluate(self, variants: list[Variant]) -> Evaluation:
        return baseline_measured(self.target, self.runner.evaluate(
            self.problem, self.baseline, variants, repetitions=self.repetitions,
            on_event=self.on_event))

    def measure(self, candidates: Sequence[Candidate]) -> tuple[Evaluation, list[Row]]:
        """One runner evaluation of ``candidates`` against the baseline: the evaluation and one
        ``Row`` per candidate, in order (also kept in ``batches``). Raises ``CudalensError``
        when the baseline cannot be measured, ``SpecError`` for a launch that cannot run."""
        labels = [f"c{self.count + i + 1}" for i in range(len(candidates))]
        variants = [self.variant(label, c) for label, c in zip(labels, candidates)]
        self.count += len(candidates)
        self.on_event(BatchStarted(self.count, tuple(labels), self.device.name))
        evaluation = self._evaluate(variants)
        rows = [Row(c, r) for c, r in zip(candidates, evaluation.candidates)]
        self.on_event(BatchDone(tuple(labels), sum(1 for r in rows if r.result.verdict.ok)))
        self.batches.append(rows)
        return evaluation, rows

    def confirm(self, rows: Sequence[Row]) -> tuple[Evaluation, tuple[Row, ...]]:
        """The confirmation step (``cudalens.engine.confirm``, the built-in search's and the
        LLM's too): ``rows``' candidates timed again together with the baseline in one
        evaluation, so their speedups and confidence intervals come from launches interleaved
        in one run (docs/architecture.md, "From a code action to a verdict", 7), those
        launched otherwise than the spec says also under the spec's launch. Returns that
        evaluation and the rows with its results and drop-in verdicts, in order."""
        labels = [f"c{self.count + i + 1}" for i in range(len(rows))]
        self.count += len(rows)
        done = confirm(rows, self.target.spec.launch, labels,
                       lambda label, row, launch: self.variant(label, row.candidate, launch),
                       lambda variants, _launches: self._evaluate(variants), self.on_event)
        return done.evaluation, done.rows

    def result(self, evaluation: Evaluation, rows: Sequence[Row], *, stop: str = "",
               confirmed: bool = False) -> OptimizeResult:
        """The ``OptimizeResult`` of ``rows`` measured in ``evaluation``, with the winner
        (``cudalens.optimize.pick_winner``) and each row's launch change."""
        user = self.target.spec.launch
        # a confirmed row keeps its drop-in verdict; the others get theirs from their launch
        shown = tuple(row if row.launch_change is not None or row.drop_in is not None
                      else with_drop_in(row, user, None) for row in rows)
        return OptimizeResult(target=self.target, device=self.device, problem=self.problem,
                              evaluation=evaluation, rows=shown, winner=pick_winner(shown),
                              stop=stop, confirmed=confirmed)

    def best(self, top: int = 4) -> list[Row]:
        """The ``top`` fastest verified rows of every batch so far, distinct candidates."""
        timed = sorted((r for rows in self.batches for r in rows
                        if r.result.verdict.ok and r.result.speedup is not None),
                       key=lambda r: -r.result.speedup.value)
        out: list[Row] = []
        for row in timed:
            if all(row.candidate.key != o.candidate.key for o in out):
                out.append(row)
        return out[:top]

