"""One evaluation split over several GPUs: candidates partitioned, each timed on its own GPU.

``SplitRun`` deals the candidates round-robin over the GPUs (lanes) it is given (only as many
lanes as there are candidates; one lane when there are none), except that a candidate labelled
``LABEL@TAG`` goes to the GPU of the candidate labelled ``LABEL`` when the request has one (the
optimize flow's drop-in check sends ``LABEL@user``, the candidate's source under the user's
launch, ``cudalens.dropin``), so the two launches of one candidate are compared on one GPU
against one baseline. Each lane's part is a whole
supervised evaluation on that GPU (``Supervisor.evaluate`` or a Ray lane's): probe, verify,
time the part's candidates interleaved with the baseline, so the baseline runs on every GPU
used and a row's speedup never compares times from two GPUs. Parts are handed to the lane's
own queue through ``dispatch(lane, part)`` (the lane runs ``part.run(supervisor)`` when its
worker is free), so a GPU never runs two things at once.

A lane is *lost* when its supervisor cannot (re)start a worker (``WorkerStartError``,
``WorkerUnavailable``; on Ray also ``WorkerLost``: the actor or its node went away). Its part
goes whole to the surviving lane with the least queued work and is evaluated again there, so
every row of that part is timed against that GPU's baseline. With every lane lost the job
fails, naming why each was lost.

The merged ``Evaluation`` lists the rows in the request's order, each with ``device`` set, and
``gpus`` the facts and baseline timing of each GPU used (in lane order); its ``device`` and
``baseline`` are the first's. A baseline that fails on a GPU ends the job with that GPU's
evaluation (nothing can be judged against it). Cancelling the job's event stops every lane:
each supervisor kills its worker.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import Callable, Optional, Sequence

from gpu_runner.events import Note
from gpu_runner.problem import Variant
from gpu_runner.report import CandidateResult, Evaluation, GpuRun
from gpu_runner.workers.supervisor import (Cancelled, SupervisorError, WorkerLost,
                                           WorkerStartError, WorkerUnavailable)

log = logging.getLogger("cudalens.runner")

LOST = (WorkerStartError, WorkerUnavailable, WorkerLost)


def deal_indices(candidates: Sequence[Variant], lanes: int) -> list[list[int]]:
    """The candidates' indices dealt into at most ``lanes`` non-empty parts, each in request
    order (module doc: round-robin, ``LABEL@TAG`` with ``LABEL``; one empty part when there
    are no candidates). Raises ``ValueError`` for ``lanes`` < 1."""
    if lanes < 1:
        raise ValueError(f"a split evaluation needs at least one GPU; found {lanes}")
    if not candidates:
        return [[]]
    groups: list[list[int]] = []
    group_of: dict[str, int] = {}  # a label -> its group
    for i, v in enumerate(candidates):
        base = v.label.rpartition("@")[0]
        if base and base in group_of:
            groups[group_of[base]].append(i)
        else:
            group_of[v.label] = len(groups)
            groups.append([i])
    parts: list[list[int]] = [[] for _ in range(min(lanes, len(groups)))]
    for group in groups:  # to the part with the fewest candidates (the first of equals)
        min(parts, key=len).extend(group)
    return [sorted(p) for p in parts]


def deal(candidates: Sequence[Variant], lanes: int) -> list[tuple[Variant, ...]]:
    """``deal_indices`` as the variants themselves."""
    return [tuple(candidates[i] for i in p) for p in deal_indices(candidates, lanes)]


def stamp(ev: Evaluation, index: int) -> Evaluation:
    """``ev`` (one GPU's evaluation) with every row's ``device`` and ``gpus`` set to
    ``index``."""
    rows = tuple(replace(r, device=index) for r in ev.candidates)
    return replace(ev, candidates=rows, gpus=(GpuRun(index, ev.device, ev.baseline),))


def baseline_failed(ev: Evaluation, part: Sequence[Variant]) -> bool:
    """Whether ``ev`` ended because the baseline itself failed (as ``Supervisor`` returns it)."""
    return (not ev.baseline_compile.ok) or (bool(part) and not ev.candidates) or \
        (not part and bool(ev.error) and ev.baseline is None)


class Part:
    """Some of a split job's candidates, to run on one lane."""

    def __init__(self, run: "SplitRun", indices: Sequence[int]):
        self.split, self.indices = run, tuple(indices)
        self.candidates = tuple(run.job.spec.candidates[i] for i in self.indices)
        self.cancel = run.job.cancel
        self.precompiled: tuple = ()  # futures of its CPU compiles (set by the pool)

    def run(self, lane: int, supervisor) -> None:
        """Evaluate this part on ``lane`` (called from the lane's own thread)."""
        self.split.run_part(lane, supervisor, self)


class SplitRun:
    """One job (``pool.PoolJob``) split over ``lanes`` (runner device indices, in order)."""

    def __init__(self, job, lanes: Sequence[int], dispatch: Callable[[int, Part], None],
                 load: Optional[Callable[[int], int]] = None):
        self.job = job
        self.lanes = list(lanes)
        self.dispatch = dispatch
        self.load = load or (lambda _lane: 0)
        self._lock = threading.Lock()
        self._pending = 0
        self._lost: dict[int, str] = {}
        self._results: dict[int, CandidateResult] = {}  # by the candidate's request index
        self._firsts: dict[int, Evaluation] = {}
        self._errors: list[str] = []
        self._over = False
        self._started = False

    def start(self) -> None:
        parts = deal_indices(self.job.spec.candidates, len(self.lanes))
        with self._lock:
            self._pending = len(parts)
        if len(parts) > 1:
            self.job.progress(Note(
                f"split over GPUs {', '.join(map(str, self.lanes[:len(parts)]))}: "
                f"{', '.join(str(len(p)) for p in parts)} candidate(s)"))
        for lane, cands in zip(self.lanes, parts):
            self.dispatch(lane, Part(self, cands))

    # -- one part, on its lane's thread -----------------------------------------------------

    def run_part(self, lane: int, supervisor, part: Part) -> None:
        with self._lock:
            if self._over:
                return
            first = not self._started
            self._started = True
        if self.job.cancel.is_set():
            self._end(self.job.cancelled)
            return
        if first:
            self.job.started(self.lanes[0])
        spec = self.job.spec.with_candidates(part.candidates)
        def say(event) -> None:  # the part's events, typed; its notes name the GPU
            self.job.progress(Note(f"gpu {lane}: {event.message}")
                              if isinstance(event, Note) else event)
        try:
            ev = supervisor.evaluate(spec, say, self.job.cancel)
            self._part_done(lane, part, ev)
        except Cancelled:
            self._end(self.job.cancelled)
        except SupervisorError as exc:
            message, kind = str(exc), exc.kind
            self._end(lambda: self.job.failed(message, kind))
        except LOST as exc:
            self._lane_lost(lane, part, str(exc))
        except Exception as exc:  # noqa: BLE001 - the job reports it; the service lives on
            log.exception("split evaluation failed on GPU %d", lane)
            message = f"internal error of the runner on GPU {lane}: {type(exc).__name__}: {exc}"
            self._end(lambda: self.job.failed(message))

    def _end(self, report: Callable[[], None]) -> None:
        with self._lock:
            if self._over:
                return
            self._over = True
        report()

    def _part_done(self, lane: int, part: Part, ev: Evaluation) -> None:
        if baseline_failed(ev, part.candidates):
            self._end(lambda: self.job.finished(stamp(ev, lane)))
            return
        with self._lock:
            if self._over:
                return
            self._firsts.setdefault(lane, ev)
            if ev.baseline is not None and self._firsts[lane].baseline is None:
                self._firsts[lane] = ev
            for i, r in zip(part.indices, ev.candidates, strict=True):
                self._results[i] = replace(r, device=lane)
            if ev.error:
                self._errors.append(f"GPU {lane}: {ev.error}")
            self._pending -= 1
            finished = self._pending == 0
        if finished:
            self._end(lambda: self.job.finished(self._merge()))

    def _lane_lost(self, lane: int, part: Part, why: str) -> None:
        with self._lock:
            if self._over:
                return
            self._lost[lane] = why
            alive = [i for i in self.lanes if i not in self._lost]
        if not alive:
            lost = "; ".join(f"GPU {i}: {w}" for i, w in self._lost.items())
            self._end(lambda: self.job.failed(f"every GPU of the evaluation was lost ({lost})"))
            return
        target = min(alive, key=lambda i: (self.load(i), self.lanes.index(i)))
        self.job.progress(Note(f"gpu {lane} lost ({why}); its {len(part.candidates)} "
                               f"candidate(s) go to gpu {target}"))
        self.dispatch(target, Part(self, part.indices))

    def _merge(self) -> Evaluation:
        order = [i for i in self.lanes if i in self._firsts]
        gpus = tuple(GpuRun(i, self._firsts[i].device, self._firsts[i].baseline) for i in order)
        head = self._firsts[order[0]]
        rows = tuple(self._results[i] for i in range(len(self.job.spec.candidates)))
        errors = list(dict.fromkeys(self._errors))
        return Evaluation(device=head.device, baseline_compile=head.baseline_compile,
                          baseline=head.baseline, candidates=rows, error="; ".join(errors),
                          gpus=gpus)
