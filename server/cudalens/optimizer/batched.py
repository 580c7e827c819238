"""The batched search: prune, time in batches, steer towards what measures best, stop on a
budget of candidates or seconds.

Input is an ordered pool of candidates (``cudalens.optimizer.staged_search.ordered`` for the built-in
passes, ``cudalens.optimizer.tunables.sweep`` for a candidate with ``@tune`` parameters, or
both), grouped into families (``Candidate.family``: same structure, different parameters).

Each round fills a batch of ``Budget.batch`` candidates and hands it to ``evaluate`` (the
runner, which verifies and times them against the baseline):

1. first, each family's first candidate (its representative; if pruning drops it, the next
   one), in pool order: every structure is measured once before any is tuned;
2. then the families ranked by their best measured speedup: the better half of the families
   with a verified measurement (at least one family) take turns giving their next candidate;
   when they run out, the rest do, best first.

Before a candidate counts towards a batch, ``prune`` (``cudalens.optimizer.prune``) may drop
it with a reason (it does not compile, it spills where the baseline does not, its occupancy
collapses); dropped candidates cost no runner time and do not count towards the budget.
After each batch ``refine`` may add candidates to a measured candidate's family (for example
``__launch_bounds__`` where the compile report shows registers limiting occupancy).

The search stops when ``Budget.candidates`` candidates have been timed, when
``Budget.seconds`` have passed (checked before each batch, so one batch may run past it), or
when nothing is left. With the same pool, the same measurements and the same budget it makes
the same choices: nothing here is random (the pool's order carries the seed).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from cudalens.optimizer.candidate import Candidate


@dataclass(frozen=True)
class Budget:
    """At most ``candidates`` timed candidates and, when given, ``seconds`` of wall-clock time
    for the whole search; ``batch`` candidates per runner call.

    Raises:
        ValueError: a negative count, a batch below 1, or seconds not positive.
    """

    candidates: int
    seconds: Optional[float] = None
    batch: int = 8

    def __post_init__(self) -> None:
        if self.candidates < 0:
            raise ValueError(f"budget.candidates must be >= 0, found {self.candidates}")
        if self.batch < 1:
            raise ValueError(f"budget.batch must be >= 1, found {self.batch}")
        if self.seconds is not None and not self.seconds > 0:
            raise ValueError(f"budget.seconds must be > 0 when given, found {self.seconds}")


@dataclass(frozen=True)
class Scored:
    """A timed candidate: ``score`` its speedup over the baseline (higher is better), None
    when it failed verification or could not run; ``result`` whatever the evaluator wants to
    keep (the runner's ``CandidateResult``)."""

    candidate: Candidate
    score: Optional[float]
    result: Any = None


@dataclass(frozen=True)
class Dropped:
    """A candidate pruned before timing, and why."""

    candidate: Candidate
    reason: str


@dataclass(frozen=True)
class SearchRun:
    """What the search did: timed candidates in the order they ran, pruned ones, the number
    of runner calls and why it stopped."""

    scored: tuple[Scored, ...]
    dropped: tuple[Dropped, ...]
    batches: int
    stop: str

    @property
    def best(self) -> Optional[Scored]:
        """The timed candidate with the highest score (the earliest among equals)."""
        good = [s for s in self.scored if s.score is not None]
        return max(good, key=lambda s: s.score, default=None)


Evaluate = Callable[[Sequence[Candidate]], Sequence[Scored]]
Prune = Callable[[Sequence[Candidate]], Sequence[Any]]  # items with .reason (None: keep)
Refine = Callable[[Scored], Sequence[Candidate]]


class _Families:
    def __init__(self, pool: Sequence[Candidate]):
        self.order: list[str] = []
        self.queues: dict[str, deque] = {}
        self.seen: set = set()
        self.best: dict[str, float] = {}
        self.started: set[str] = set()
        self.given: dict[str, int] = {}  # candidates each family gave after its first
        self.measured: set[str] = set()  # families with a timed candidate
        for c in pool:
            self.add(c)

    def add(self, c: Candidate) -> bool:
        if c.key in self.seen:
            return False
        self.seen.add(c.key)
        if c.family not in self.queues:
            self.order.append(c.family)
            self.queues[c.family] = deque()
        self.queues[c.family].append(c)
        return True

    def dropped(self, c: Candidate) -> None:
        """A pruned family representative: the family's next candidate represents it."""
        if c.family not in self.measured:
            self.started.discard(c.family)

    def record(self, s: Scored) -> None:
        fam = s.candidate.family
        self.measured.add(fam)
        if s.score is not None and s.score > self.best.get(fam, -math.inf):
            self.best[fam] = s.score

    def next(self) -> Optional[Candidate]:
        for fam in self.order:  # 1. every family's representative first
            if fam not in self.started and self.queues[fam]:
                self.started.add(fam)
                return self.queues[fam].popleft()
        measured = sorted((f for f in self.order if f in self.best),
                          key=lambda f: (-self.best[f], self.order.index(f)))
        top = measured[:max(1, math.ceil(len(measured) / 2))]
        rest = measured[len(top):] + [f for f in self.order if f not in self.best]
        live = [f for f in top if self.queues[f]]
        if live:  # the best families take turns: the one that gave least goes first
            fam = min(live, key=lambda f: (self.given.get(f, 0), top.index(f)))
            self.given[fam] = self.given.get(fam, 0) + 1
            return self.queues[fam].popleft()
        for fam in rest:  # then the others, best first
            if self.queues[fam]:
                return self.queues[fam].popleft()
        return None


def run(pool: Sequence[Candidate], evaluate: Evaluate, *, budget: Budget,
        prune: Optional[Prune] = None, refine: Optional[Refine] = None,
        clock: Callable[[], float] = time.monotonic) -> SearchRun:
    """Searches ``pool`` (module doc).

    Raises:
        ValueError: ``evaluate`` returned a different number of results than candidates.
    """
    fams = _Families(pool)
    start = clock()
    scored: list[Scored] = []
    dropped: list[Dropped] = []
    batches = 0
    stop = ""
    while True:
        if len(scored) >= budget.candidates:
            stop = f"the budget of {budget.candidates} timed candidates is used"
            break
        if budget.seconds is not None and clock() - start >= budget.seconds:
            stop = f"the time budget of {budget.seconds:g} s is used"
            break
        want = min(budget.batch, budget.candidates - len(scored))
        batch: list[Candidate] = []
        exhausted = False
        while len(batch) < want:
            picks = []
            while len(picks) < want - len(batch):
                c = fams.next()
                if c is None:
                    exhausted = True
                    break
                picks.append(c)
            if not picks:
                break
            verdicts = prune(picks) if prune is not None else [None] * len(picks)
            for c, v in zip(picks, verdicts):
                reason = getattr(v, "reason", None) if v is not None else None
                if reason:
                    dropped.append(Dropped(c, reason))
                    fams.dropped(c)
                else:
                    batch.append(c)
            if exhausted:
                break
        if not batch:
            stop = "every candidate was tried or pruned"
            break
        results = list(evaluate(batch))
        batches += 1
        if len(results) != len(batch):
            raise ValueError(f"evaluate returned {len(results)} results for {len(batch)} "
                             f"candidates")
        for s in results:
            scored.append(s)
            fams.record(s)
        if refine is not None:
            for s in results:
                for extra in refine(s):
                    fams.add(extra)
    return SearchRun(tuple(scored), tuple(dropped), batches, stop)


def bounds_refiner(ctx, pruner) -> Refine:
    """A ``Refine`` adding ``__launch_bounds__(T, M)`` to a verified candidate whose compile
    report shows registers limiting its occupancy: ``M`` the blocks per SM that its threads
    alone would allow, so ptxas caps the registers to fit them (the pruner then drops the
    variant if that makes it spill). ``ctx`` is the search's context (for the path and
    spec); ``pruner`` a ``CompilePruner`` that has assessed the candidate."""
    from cudalens.optimizer.candidate import family_of, make_label
    from cudalens.optimizer.context import make_context
    from cudalens.optimizer.passes import launch_bounds

    def refine(s: Scored) -> list[Candidate]:
        if s.score is None or "launch_bounds" in s.candidate.passes:
            return []
        res = pruner.resources(s.candidate)
        if res is None or res.occupancy.limiter != "registers":
            return []
        spec = dataclasses.replace(ctx.spec, launch=s.candidate.launch)
        cctx = make_context(s.candidate.source, ctx.path, ctx.kernel.name, spec,
                            header_macros=ctx.header_macros)
        if launch_bounds.check(cctx) is not None:
            return []
        fill = min(pruner.limits.max_warps // res.occupancy.warps_per_block,
                   pruner.limits.max_blocks)
        if fill <= res.occupancy.blocks:
            return []
        fill = min(fill, launch_bounds.THREADS_PER_SM // res.threads)
        if fill <= res.occupancy.blocks:
            return []
        result = launch_bounds.apply(cctx, min_blocks=fill)
        tags = tuple(s.candidate.label.split()) + result.tags
        from cudalens.optimizer.staged_search import KernelStyler
        return [KernelStyler(cctx)(dataclasses.replace(
            s.candidate, label=make_label(tags), source=result.source,
            explanation=f"{s.candidate.explanation}; {result.explanation}",
            passes=s.candidate.passes + (launch_bounds.name,),
            family=s.candidate.family or family_of(tags)))]

    return refine


def runner_evaluate(client, problem, baseline, spec, kernel_name: str, sm_count: int, *,
                    repetitions: int = 50, on_event=None, build=None) -> Evaluate:
    """An ``Evaluate`` that resolves candidates into runner variants (labels ``c1``, ``c2``...
    across batches) and times them against ``baseline`` with ``client.evaluate``
    (``cudalens.runner_client.RunnerClient``); the score is the speedup of medians when the
    candidate passed verification, the ``result`` the runner's ``CandidateResult``.
    ``build``: the project's headers and options (``cudalens.build.headers.RequestFiles``, as
    ``cudalens.optimize.prepare`` makes for the baseline); each variant carries its ``files``
    and ``source_path`` and its ``options`` before the candidate's own, so a kernel including a
    project header compiles in the runner (None: no headers, the default ``kernel.cu`` path).

    Raises (when called): ``cudalens.spec.errors.SpecError`` for a launch that cannot be
    resolved, ``RuntimeError`` when the runner could not measure the baseline.
    """
    from cudalens.spec.resolve import build_variant

    count = [0]

    def evaluate(cands: Sequence[Candidate]) -> list[Scored]:
        variants = []
        for c in cands:
            count[0] += 1
            if build is None:
                variants.append(build_variant(f"c{count[0]}", c.source, kernel_name, spec,
                                              c.launch, sm_count, options=c.options))
            else:
                variants.append(build_variant(
                    f"c{count[0]}", c.source, kernel_name, spec, c.launch, sm_count,
                    options=(*build.options, *c.options), files=build.files,
                    source_path=build.source_path))
        evaluation = client.evaluate(problem, baseline, variants, repetitions=repetitions,
                                     on_event=on_event)
        if evaluation.error:
            raise RuntimeError(f"the baseline kernel {kernel_name} could not be measured: "
                               f"{evaluation.error}")
        out = []
        for c, r in zip(cands, evaluation.candidates):
            ok = r.verdict.ok and r.speedup is not None
            out.append(Scored(c, r.speedup.value if ok else None, r))
        return out

    return evaluate


def search(ctx, evaluate: Evaluate, *, budget: Budget, seed: int = 0, arch: str = "sm_90",
           extra: Sequence[Candidate] = (), prune: bool = True,
           clock: Callable[[], float] = time.monotonic, stages=None) -> SearchRun:
    """The whole built-in search for ``ctx``'s kernel: the passes' candidates in search order
    (``cudalens.optimizer.staged_search.ordered``) followed by ``extra`` (each swept over its
    ``@tune`` parameters), pruned by nvcc's report for ``arch`` when ``prune`` and nvcc is
    installed (without nvcc nothing is pruned: the runner compiles each candidate anyway),
    ``__launch_bounds__`` added where registers limit a measured candidate's occupancy, and
    measured by ``evaluate`` within ``budget``. ``stages``: the passes composed
    (``staged_search.ordered``; None: ``staged_search.STAGES``, the built-in ones).

    Raises:
        ValueError: the baseline does not compile (when pruning), or from ``run``.
        cudalens.optimizer.tunables.TuneError: a malformed ``@tune`` marker in ``extra``.
    """
    from cudalens.check.nvcc import NvccNotFound, find_nvcc
    from cudalens.occupancy import LIMITS
    from cudalens.optimizer.prune import CompilePruner
    from cudalens.optimizer.staged_search import STAGES, ordered
    from cudalens.optimizer.tunables import sweep

    pool = list(ordered(ctx, seed, STAGES if stages is None else stages))
    for cand in extra:
        pool.extend(sweep(cand, ctx.spec))
    pruner = None
    if prune:
        try:
            find_nvcc()
        except NvccNotFound:
            pruner = None
        else:
            pruner = CompilePruner(ctx, arch=arch, limits=LIMITS.get(arch, LIMITS["sm_90"]))
    return run(pool, evaluate, budget=budget, prune=pruner,
               refine=bounds_refiner(ctx, pruner) if pruner is not None else None, clock=clock)
