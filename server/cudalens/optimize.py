"""The optimize flow shared by the CLI and the language server.

The built-in search (``cudalens.optimizer.batched``: every pass, compile-pruned, timed in
batches, steered towards the structures that measure best) -> each batch resolved into runner
variants, verified and timed against the baseline -> the best verified candidates timed again
together with the baseline in one final evaluation (the *confirmation*), so the winner's
speedup and its confidence interval come from launches interleaved with the baseline's in one
run, never from comparing numbers of different runner calls -> pick the winner.

The confirmation also runs each confirmed candidate whose launch differs from the user's
(the spec's launch) with the same source under the user's launch, so every offered candidate
says whether it is a drop-in (``cudalens.dropin``): ``Row.launch_change`` and ``Row.drop_in``.
A confirmation happens when the best candidates come from different batches or when one of
them changes the launch; it is the engine's one confirmation step (``cudalens.engine.confirm``,
the LLM agent's too).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Optional

from gpu_runner.problem import Problem, Variant
from gpu_runner.report import CandidateResult, DeviceInfo, Evaluation
from cudalens.build import RequestFiles, build_for, request_files
from cudalens.diffs import unified_diff
from cudalens.dropin import DropIn, LaunchChange, launch_change_of
from cudalens.engine.confirm import confirm as confirm_rows, moved as moved_rows, with_drop_in
from cudalens.engine.events import (BatchDone, BatchStarted, BestSoFar, OnEvent, Pruned,
                                    ignore)
from cudalens.errors import CudalensError
from cudalens.optimizer.prune import BaselineDoesNotCompile
from cudalens.optimizer.candidate import Candidate
from cudalens.optimizer.context import make_context
from cudalens.optimizer.batched import Budget, Scored, SearchRun, search
from cudalens.runner_client import RunnerClient
from cudalens.spec.errors import SpecError
from cudalens.spec.model import LaunchDecl
from cudalens.spec.resolve import build_problem, build_variant
from cudalens.target import Target

if TYPE_CHECKING:
    from cudalens.capture.replay import Replay
    from cudalens.sanitizer_status import SanitizerStatus

# A candidate wins only when the lower end of its speedup's 95% confidence interval is above
# this: anything less is within measurement noise of the baseline.
SIGNIFICANT_SPEEDUP = 1.0


@dataclass(frozen=True)
class Row:
    """One evaluated candidate: what it is and what the runner found.

    ``launch_change``: the candidate's launch where it differs from the user's (None: the
    same). ``drop_in``: the candidate under the user's launch (module ``cudalens.dropin``);
    None when not checked. ``variant``: the runner variant ``result`` was measured as (before
    a capture replay's launches are put first), built once and passed along (the
    confirmation, the profile of the winner); None where a proposer did not keep it.
    """

    candidate: Candidate
    result: CandidateResult
    launch_change: Optional[LaunchChange] = None
    drop_in: Optional[DropIn] = None
    variant: Optional[Variant] = None


@dataclass(frozen=True)
class Batch:
    """One runner evaluation: the variants sent (besides the baseline) and what came back,
    ``evaluation.candidates[i]`` for ``variants[i]``."""

    variants: tuple[Variant, ...]
    evaluation: Evaluation


@dataclass(frozen=True)
class OptimizeResult:
    target: Target
    device: DeviceInfo
    problem: Problem
    evaluation: Evaluation
    rows: tuple[Row, ...]
    winner: Optional[Row]
    # Candidates whose launch configuration cannot run this problem (label, reason): never sent.
    skipped: tuple[tuple[str, str], ...] = ()
    # Candidates the compile report ruled out before timing (label, reason).
    pruned: tuple[tuple[str, str], ...] = ()
    # Every runner evaluation, in order: the search's batches, then the confirmation (if any).
    # ``evaluation`` is the one ``rows`` with timings and ``winner`` come from.
    batches: tuple["Batch", ...] = ()
    # Why the search stopped, in words ("the budget of 24 timed candidates is used").
    stop: str = ""
    # ``evaluation`` is the confirmation: the best of several batches timed again together.
    confirmed: bool = False
    # The compute-sanitizer check of the original before the run (``cudalens.sanitizer_status``);
    # None where the caller did not say (the flow itself does not run it).
    sanitizer: Optional["SanitizerStatus"] = None
    # The baseline variant as built for the runner (before a capture replay's launches).
    baseline: Optional[Variant] = None

    @property
    def best_verified(self) -> Optional[Row]:
        """The fastest candidate that passed verification, significant or not."""
        timed = [r for r in self.rows if r.result.verdict.ok and r.result.speedup is not None]
        return max(timed, key=lambda r: r.result.speedup.value, default=None)

    @property
    def best_drop_in(self) -> Optional[Row]:
        """The fastest row that is correct under the user's launch and significantly faster
        there (its drop-in speedup's 95% CI above 1.0); None when there is none."""
        good = [r for r in self.rows if r.drop_in is not None and r.drop_in.ok
                and r.drop_in.speedup.ci_low > SIGNIFICANT_SPEEDUP]
        return max(good, key=lambda r: r.drop_in.speedup.value, default=None)

    def diff(self, row: Optional[Row] = None) -> str:
        """The unified diff from the original file to ``row``'s (default: the winner's) source."""
        row = row or self.winner
        if row is None:
            return ""
        name = str(self.target.path)
        old, new = (name, name) if self.target.path.is_absolute() else (f"a/{name}", f"b/{name}")
        return unified_diff(self.target.text, row.candidate.source, old, new)


def pick_winner(rows: tuple[Row, ...]) -> Optional[Row]:
    """The verified candidate with the highest speedup whose 95% CI lies above 1.0, and
    whose time is not below what the roofline allows for its bytes and FLOPs (such a time
    means the measurement, not the kernel, is off: it is flagged, never offered)."""
    good = [r for r in rows if r.result.verdict.ok and r.result.speedup is not None
            and r.result.speedup.ci_low > SIGNIFICANT_SPEEDUP
            and not (r.result.timing is not None and r.result.timing.above_roofline)]
    return max(good, key=lambda r: r.result.speedup.value, default=None)


class Prepared(NamedTuple):
    """What every measurement of one target on one runner starts from (``prepare``)."""

    device: DeviceInfo
    build: RequestFiles
    problem: Problem
    baseline: Variant


def prepare(target: Target, runner) -> Prepared:
    """The runner's device facts, the request's build files (``cudalens.build``: the project's
    headers and macros), the spec's problem and the baseline variant (the original kernel under
    the spec's launch), in that order; ``optimize`` and ``cudalens.engine.bench.Bench.make``
    both start here.

    Raises:
        CudalensError: the build cannot be read, or the spec cannot be resolved (the message
            names the spec's line)."""
    device = runner.device_info()
    build = request_files(target.path, target.text, build_for(target.path))
    try:
        problem = build_problem(target.spec, target.kernel)
        baseline = build_variant("baseline", target.text, target.kernel.qualified_name,
                                 target.spec, target.spec.launch, device.sm_count,
                                 options=build.options, files=build.files,
                                 source_path=build.source_path)
    except SpecError as exc:
        raise CudalensError(str(exc)) from None
    return Prepared(device, build, problem, baseline)


def baseline_measured(target: Target, evaluation: Evaluation) -> Evaluation:
    """``evaluation`` (of ``target``'s baseline and candidates), once it holds the baseline's
    timing: nothing can be compared without it (``optimize`` and ``engine.bench.Bench``).

    Raises:
        CudalensError: the baseline was not timed, with the runner's error where it gave one."""
    if evaluation.baseline is None:
        raise CudalensError(
            f"{target.path}: the baseline kernel {target.kernel.name} could not be "
            f"measured: {evaluation.error or 'the runner returned no timing for it'}")
    return evaluation


def optimize(target: Target, client: RunnerClient, *, budget: int = 24, seed: int = 0,
             repetitions: int = 50, seconds: Optional[float] = None, batch: int = 8,
             confirm: int = 4, prune: bool = True,
             on_event: Optional[OnEvent] = None,
             replay: Optional["Replay"] = None, stages=None) -> OptimizeResult:
    """Searches for a faster version of ``target``'s kernel and picks a winner.

    ``budget`` timed candidates at most (pruned and unresolvable ones do not count),
    ``seconds`` of search at most when given, ``batch`` candidates per runner evaluation;
    then the ``confirm`` fastest distinct verified candidates are timed again together with
    the baseline when they came from different batches (module doc). The rows are those of
    the evaluation the winner is picked from, followed by the failed candidates of every batch.
    With the same target, runner answers, budget and seed (and no ``seconds``) the same
    candidates are proposed in the same batches. With ``replay``
    (``cudalens.capture.replay``), the captured launch is the timed case, first in the problem
    and in every variant's launches. ``on_event`` gets the run's events
    (``cudalens.engine.events``: the runner's, and ``BatchStarted``, ``BatchDone``,
    ``BestSoFar``, ``Confirming``, ``Pruned``); an exception it raises stops the run.
    ``stages``: the passes the search composes (None: the built-in ones). The front ends call
    this through ``cudalens.engine.run`` (``BuiltinProposer``).

    Raises:
        CudalensError: the spec cannot be resolved, the build cannot be read or its project
            headers cannot be sent (``cudalens.build``), or the baseline itself fails to compile
            (here, with nvcc, or on the runner) or run.
        ValueError: a negative budget, a batch below 1, or ``seconds`` not positive.
    """
    say = on_event or ignore
    device, build, problem, baseline = prepare(target, client)

    ctx = make_context(target.text, str(target.path), target.kernel.name, target.spec,
                       source=target.source, header_macros=target.header_macros)
    built = baseline
    if replay is not None:
        problem = replay.problem(problem)
        baseline = replay.variant(baseline, target.spec.launch)
    flow = _Batches(target, client, problem, baseline, device, repetitions, say, replay, build)
    arch = f"sm_{device.compute_capability[0]}{device.compute_capability[1]}"
    try:
        run = search(ctx, flow.evaluate, budget=Budget(budget, seconds, batch), seed=seed,
                     arch=arch, prune=prune, stages=stages)
    except BaselineDoesNotCompile as exc:
        raise CudalensError(str(exc)) from None
    for d in run.dropped:
        say(Pruned(d.candidate.label, d.reason))
    if not flow.evaluations:  # nothing was left to time: the baseline alone
        flow.evaluate([])
    evaluation, rows, winner = flow.final(run, confirm)
    return OptimizeResult(target=target, device=device, problem=problem, evaluation=evaluation,
                          rows=rows, winner=winner, skipped=tuple(flow.skipped),
                          pruned=tuple((d.candidate.label, d.reason) for d in run.dropped),
                          batches=tuple(flow.sent), stop=run.stop,
                          confirmed=flow.confirmed, baseline=built)


class _Batches:
    """The search's ``evaluate``: resolves candidates into variants (labels ``c1``, ``c2``...
    across batches), sends them to the runner with the baseline, keeps every evaluation."""

    def __init__(self, target: Target, client: RunnerClient, problem: Problem,
                 baseline: Variant, device: DeviceInfo, repetitions: int,
                 say: OnEvent, replay: Optional["Replay"] = None,
                 build: Optional[RequestFiles] = None):
        self.target, self.client, self.problem, self.baseline = target, client, problem, baseline
        self.build = build or RequestFiles({}, ())
        self.replay = replay
        self.device, self.repetitions, self.say = device, repetitions, say
        self.evaluations: list[Evaluation] = []
        self.sent: list[Batch] = []
        self.confirmed = False
        self.batches: list[list[Row]] = []
        self.skipped: list[tuple[str, str]] = []
        self.count = 0

    def _variant(self, label: str, c: Candidate, launch: LaunchDecl) -> Variant:
        """``c`` as a runner variant under ``launch``, with the build's headers and options
        (before a capture replay's launches are put first: ``_evaluate``).

        Raises:
            SpecError: ``launch`` cannot be resolved against the spec's sizes.
        """
        return build_variant(label, c.source, self.target.kernel.qualified_name,
                             self.target.spec, launch, self.device.sm_count,
                             options=(*self.build.options, *c.options), files=self.build.files,
                             source_path=self.build.source_path)

    def _confirm_variant(self, label: str, row: Row, launch: LaunchDecl) -> Variant:
        """The confirmation's variant of ``row`` (``cudalens.engine.confirm``): under its own
        launch the one built in its batch, relabelled; under another (the user's), built."""
        if launch is row.candidate.launch and row.variant is not None:
            return dataclasses.replace(row.variant, label=label)  # built once, relabelled
        return self._variant(label, row.candidate, launch)

    def _send(self, candidates: list[Candidate], built: list[Variant]) -> Evaluation:
        """One runner evaluation of ``candidates`` under their own launches (``built``, their
        variants)."""
        return self._evaluate(built, [c.launch for c in candidates])

    def _evaluate(self, variants: list[Variant], launches: list[LaunchDecl]) -> Evaluation:
        """One runner evaluation of ``variants`` (built under ``launches``) against the
        baseline, kept in ``sent``; with a replay, the captured launch first (the user's
        launch is the captured one). Raises ``CudalensError`` when the baseline could not be
        measured."""
        if self.replay is not None:
            variants = [self.replay.variant(v, launch) for v, launch in zip(variants, launches)]
        evaluation = baseline_measured(self.target, self.client.evaluate(
            self.problem, self.baseline, variants, repetitions=self.repetitions,
            on_event=self.say))
        self.evaluations.append(evaluation)
        self.sent.append(Batch(tuple(variants), evaluation))
        return evaluation

    def evaluate(self, candidates) -> list[Scored]:
        sendable: list[Candidate] = []
        built: list[Variant] = []
        for c in candidates:
            try:
                variant = self._variant(f"c{self.count + 1}", c, c.launch)
            except SpecError as exc:
                # The candidate's own launch configuration does not fit these sizes (a grid.y
                # above 65535, say): the user's spec is fine, the candidate is dropped.
                self.skipped.append((c.label, exc.message))
                self.say(Pruned(c.label, exc.message))
                continue
            self.count += 1
            sendable.append(c)
            built.append(variant)
        if not sendable and self.evaluations:
            return [Scored(c, None) for c in candidates]
        self.say(BatchStarted(self.count, tuple(v.label for v in built), self.device.name))
        evaluation = self._send(sendable, built)
        rows = [Row(c, r, variant=v) for c, r, v in zip(sendable, evaluation.candidates, built)]
        self.say(BatchDone(tuple(v.label for v in built),
                           sum(1 for r in rows if r.result.verdict.ok)))
        self.batches.append(rows)
        self._say_best()
        by_key = {row.candidate.key: row for row in rows}
        out = []
        for c in candidates:
            row = by_key.get(c.key)
            ok = row is not None and row.result.verdict.ok and row.result.speedup is not None
            out.append(Scored(c, row.result.speedup.value if ok else None,
                              row.result if row else None))
        return out

    def _say_best(self) -> None:
        """After each batch: ``best so far: 1.83x (restrict block=512, verified), 16
        candidates`` (the
        fastest verified speedup of any batch, each against its own batch's baseline; the
        final pick may time the fastest again together), or nothing before one verifies."""
        timed = [row for rows in self.batches for row in rows
                 if row.result.verdict.ok and row.result.speedup is not None]
        if timed:
            best = max(timed, key=lambda row: row.result.speedup.value)
            self.say(BestSoFar(best.result.speedup.value, best.candidate.label, self.count))

    def _other_families(self, best: list[Row], top: list[Row], count: int) -> list[Row]:
        """Up to ``count`` more rows for the confirmation, so that a drop-in has a chance to be
        found: the fastest of each family not in ``top`` whose launch differs from the user's
        (``best`` is sorted fastest first; a family that keeps the launch is a drop-in with
        the speedup it measured, and a launch-only change is the original kernel under the
        user's launch)."""
        seen = {_family(row) for row in top}
        out: list[Row] = []
        for row in best:
            if len(out) >= count:
                break
            if _family(row) in seen or row.candidate.source == self.target.text or \
                    launch_change_of(row.candidate.launch, self.target.spec.launch) is None:
                continue
            seen.add(_family(row))
            out.append(row)
        return out

    def final(self, run: SearchRun, confirm: int
              ) -> tuple[Evaluation, tuple[Row, ...], Optional[Row]]:
        """The evaluation the result reports, its rows (then every batch's failed rows), and
        the winner among them."""
        def timed(row: Row) -> bool:
            return row.result.verdict.ok and row.result.speedup is not None

        failed = [row for rows in self.batches for row in rows if not timed(row)]
        with_timed = [i for i, rows in enumerate(self.batches) if any(map(timed, rows))]
        if not with_timed:
            return self.evaluations[-1], tuple(failed), None
        best = sorted((row for i in with_timed for row in self.batches[i] if timed(row)),
                      key=lambda row: -row.result.speedup.value)
        top: list[Row] = []
        for row in best:
            if all(row.candidate.key != t.candidate.key for t in top):
                top.append(row)
        top = top[:max(confirm, 1)]
        top += self._other_families(best, top, max(confirm, 1) // 2)
        batch_of = {id(row): i for i, rows in enumerate(self.batches) for row in rows}
        user = self.target.spec.launch
        if moved_rows(top, user) or (len(top) > 1 and
                                     len({batch_of[id(row)] for row in top}) > 1):
            labels = [f"c{self.count + i + 1}" for i in range(len(top))]
            done = confirm_rows(top, user, labels, self._confirm_variant, self._evaluate,
                                self.say)
            self.confirmed = True
            return done.evaluation, done.rows + tuple(failed), pick_winner(done.rows)
        keep = batch_of[id(best[0])]
        rows = tuple(with_drop_in(row, user, None) for row in self.batches[keep])
        others = tuple(row for i, rs in enumerate(self.batches) if i != keep
                       for row in rs if not timed(row))
        return self.evaluations[keep], rows + others, pick_winner(rows)


def _family(row: Row) -> str:
    return row.candidate.family
