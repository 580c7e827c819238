"""The optimize flow shared by the CLI and the language server.

propose candidates (built-in passes and search) -> resolve each into a runner variant ->
the runner verifies and times them against the baseline -> pick the winner.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Callable, Optional

from gpu_runner.problem import Problem, Variant
from gpu_runner.report import CandidateResult, DeviceInfo, Evaluation
from cudalens.errors import CudalensError
from cudalens.optimizer.candidate import Candidate
from cudalens.optimizer.context import make_context
from cudalens.optimizer.search import propose
from cudalens.runner_client import RunnerClient
from cudalens.spec.errors import SpecError
from cudalens.spec.resolve import build_problem, build_variant
from cudalens.target import Target

# A candidate wins only when the lower end of its speedup's 95% confidence interval is above
# this: anything less is within measurement noise of the baseline.
SIGNIFICANT_SPEEDUP = 1.0


@dataclass(frozen=True)
class Row:
    """One evaluated candidate: what it is and what the runner found."""

    candidate: Candidate
    result: CandidateResult


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

    @property
    def best_verified(self) -> Optional[Row]:
        """The fastest candidate that passed verification, significant or not."""
        timed = [r for r in self.rows if r.result.verdict.ok and r.result.speedup is not None]
        return max(timed, key=lambda r: r.result.speedup.value, default=None)

    def diff(self, row: Optional[Row] = None) -> str:
        """The unified diff from the original file to ``row``'s (default: the winner's) source."""
        row = row or self.winner
        if row is None:
            return ""
        name = str(self.target.path)
        old, new = (name, name) if self.target.path.is_absolute() else (f"a/{name}", f"b/{name}")
        return "".join(difflib.unified_diff(
            self.target.text.splitlines(keepends=True),
            row.candidate.source.splitlines(keepends=True), fromfile=old, tofile=new))


def pick_winner(rows: tuple[Row, ...]) -> Optional[Row]:
    """The verified candidate with the highest speedup whose 95% CI lies above 1.0."""
    good = [r for r in rows if r.result.verdict.ok and r.result.speedup is not None
            and r.result.speedup.ci_low > SIGNIFICANT_SPEEDUP]
    return max(good, key=lambda r: r.result.speedup.value, default=None)


def optimize(target: Target, client: RunnerClient, *, budget: int = 24, seed: int = 0,
             repetitions: int = 50,
             progress: Optional[Callable[[str], None]] = None) -> OptimizeResult:
    """Proposes up to ``budget`` candidates for ``target``, evaluates them and picks a winner.

    Raises:
        CudalensError: the spec cannot be resolved, or the baseline itself fails to compile or run.
    """
    say = progress or (lambda _msg: None)
    device = client.device_info()
    try:
        problem = build_problem(target.spec, target.kernel)
        baseline = build_variant("baseline", target.text, target.kernel.qualified_name,
                                 target.spec, target.spec.launch, device.sm_count)
    except SpecError as exc:
        raise CudalensError(str(exc)) from None

    say(f"proposing candidates for {target.kernel.name}")
    ctx = make_context(target.text, str(target.path), target.kernel.name, target.spec)
    candidates = propose(ctx, budget=budget, seed=seed)
    variants: list[Variant] = []
    kept: list[Candidate] = []
    skipped: list[tuple[str, str]] = []
    for cand in candidates:
        try:
            variants.append(build_variant(f"c{len(kept) + 1}", cand.source,
                                          target.kernel.qualified_name, target.spec, cand.launch,
                                          device.sm_count, options=cand.options))
            kept.append(cand)
        except SpecError as exc:
            # The candidate's own launch configuration does not fit these sizes (a grid.y above
            # 65535, say): the user's spec is fine, the candidate is dropped.
            skipped.append((cand.label, exc.message))
    candidates = kept
    say(f"{len(variants)} candidates; verifying and timing on {device.name}")
    evaluation = client.evaluate(problem, baseline, variants, repetitions=repetitions,
                                 progress=say)
    if evaluation.baseline is None:
        raise CudalensError(f"{target.path}: the baseline kernel {target.kernel.name} could not be "
                            f"measured: {evaluation.error or 'the runner returned no timing for it'}")
    rows = tuple(Row(c, r) for c, r in zip(candidates, evaluation.candidates))
    return OptimizeResult(target=target, device=device, problem=problem, evaluation=evaluation,
                          rows=rows, winner=pick_winner(rows), skipped=tuple(skipped))
