"""Supervised evaluation on one GPU: faults, crashes and hangs cost one candidate, not the run.

``Supervisor.evaluate(spec)`` does:

1. **Probe.** The baseline alone on the timed case and the first seed, with a short timing
   loop, under ``Limits.first_kernel_timeout_s``. A baseline that fails ends the evaluation
   with its error (nothing can be judged against it). Its median sets the kernel time limit
   for everything after (``Limits.kernel_timeout_s``) and so how long a worker may stay silent
   (``Limits.silence_s``).
2. **Groups.** The candidates go to the worker as one group (one ``Runner.evaluate``: verify
   all, then time all interleaved with the baseline). What comes back:

   - an evaluation: each candidate's result is final, except those *displaced* by another
     candidate's fault (``results.displaced``); if the worker's GPU is wedged the worker is
     replaced and the displaced candidates form the next group, in the fresh worker;
   - the worker died or went silent: it is killed and replaced; the group is split, with the
     candidate the worker's last event was about (``Compiling`` or ``Verifying`` it) alone
     first and the
     others after, or else in halves; a candidate that kills a worker *alone* gets
     ``launch_error`` (died) or ``timeout`` (silent). Before blaming the first such candidate
     the baseline is run alone on the full problem once: if that kills the worker too, the
     baseline is to blame and the evaluation ends with that error.

   Every group after a failure is smaller than the failed one, so this ends; one bad
   candidate among N costs about 2 log2(N) extra groups, or one when an event names it.

Each group times its candidates against the baseline in the same worker, interleaved, so a
speedup never compares timings from two processes. ``Evaluation.baseline`` is the baseline
timing of the first group that timed it (a group whose worker wedged times nothing), else the
probe's. Use a supervisor from one thread at a time.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, replace
from typing import Optional, Sequence

from gpu_runner.events import Compiling, Note, OnEvent, Verifying, emit_to
from gpu_runner.problem import Variant
from gpu_runner.report import CandidateResult, CompileReport, DeviceInfo, Evaluation
from gpu_runner.workers.backend import WorkerConfig
from gpu_runner.workers.handle import (Outcome, WorkerHandle, WorkerLost, WorkerStartError,
                                       WorkerUnavailable)
from gpu_runner.workers.limits import Limits
from gpu_runner.workers.protocol import CompileTask, EvaluateSpec, EvaluateTask, Ready
from gpu_runner.workers.results import unknown_compile, assemble, crashed, displaced, hung

PROBE_REPETITIONS = 5
PROBE_BUDGET_S = 5.0

__all__ = ["Supervisor", "SupervisorError", "Cancelled", "WorkerEvent", "WorkerUnavailable",
           "WorkerStartError", "WorkerLost", "suspect_from_events"]


class SupervisorError(RuntimeError):
    """The worker rejected or failed a task with an exception (not a GPU fault); ``kind`` is
    ``bad_request`` for a malformed request, else ``error``."""

    def __init__(self, message: str, kind: str = "error"):
        super().__init__(message)
        self.kind = kind


class Cancelled(RuntimeError):
    """The caller cancelled the task; the worker that ran it was killed."""


@dataclass(frozen=True)
class WorkerEvent:
    """A worker's life event: ``started``, ``died``, ``hung``, ``wedged``, ``cancelled`` or
    ``stopped``, with its pid and the reason."""

    kind: str
    pid: int
    detail: str = ""


def suspect_from_events(events: Sequence[object],
                        group: Sequence[Variant]) -> Optional[Variant]:
    """The candidate of ``group`` the worker was running when it stopped: the one that the
    *last* event (``Compiling`` or ``Verifying``, not of the baseline) is about; else None
    (the last event was a timing round, a note, or about a variant not in ``group``)."""
    if not events or not isinstance(events[-1], (Compiling, Verifying)):
        return None
    last = events[-1]
    if isinstance(last, Verifying) and last.baseline:
        return None
    return next((v for v in group if v.label == last.label), None)


def faulted_words(group: Sequence[Variant], ev: Evaluation, wedged: bool) -> str:
    """``"LABEL faulted (REASON); "`` for the candidates of ``group`` whose own result is the
    fault that wedged the worker (a ``launch_error`` or ``timeout`` not caused by another
    kernel), so the progress line names the candidate and not only the count of those it
    displaced; "" when none is known (the fault came with no verdict, e.g. while timing the
    baseline)."""
    if not wedged:
        return ""
    named = [(v.label, r.verdict.reason) for v, r in zip(group, ev.candidates)
             if r.verdict.status in ("launch_error", "timeout") and not displaced(r, wedged)]
    return "".join(f"{label} faulted ({reason}); " for label, reason in named)


class Supervisor:
    """Runs evaluations and compiles on one GPU through a worker process it replaces at need.

    Raises ``WorkerUnavailable`` (no GPU; message from the worker) and ``WorkerStartError``
    from ``start`` and from any call that has to start a worker.
    """

    def __init__(self, config: WorkerConfig, limits: Optional[Limits] = None):
        self.config = config
        self.limits = limits or Limits()
        self.ready: Optional[Ready] = None
        self.info: Optional[DeviceInfo] = None
        self.events: list[WorkerEvent] = []
        self._lock = threading.Lock()
        self._worker: Optional[WorkerHandle] = None

    # -- the worker --------------------------------------------------------------------------

    def start(self) -> Ready:
        """Start the worker unless one is running; its ``Ready`` (device facts included)."""
        self._ensure()
        return self.ready

    @property
    def worker_pid(self) -> Optional[int]:
        return self._worker.pid if self._worker is not None else None

    def _event(self, kind: str, pid: Optional[int], detail: str = "") -> None:
        with self._lock:
            self.events.append(WorkerEvent(kind, pid or 0, detail))

    def _ensure(self) -> WorkerHandle:
        if self._worker is not None and self._worker.alive():
            return self._worker
        if self._worker is not None:
            self._worker.kill()
            self._worker = None
        worker = WorkerHandle(self.config, startup_s=self.limits.startup_s,
                              stop_s=self.limits.stop_s)
        self.ready = worker.start()
        self._worker = worker
        if self.info is None:
            self.info = self.ready.info
        self._event("started", self.ready.pid)
        return worker

    def _retire(self, kind: str, detail: str) -> None:
        if self._worker is None:
            return
        pid = self._worker.pid
        self._worker.kill()
        self._worker = None
        self._event(kind, pid, detail)

    def close(self) -> None:
        """Stop the worker (it closes its GPU context)."""
        if self._worker is not None:
            pid = self._worker.pid
            self._worker.stop()
            self._worker = None
            self._event("stopped", pid)

    def _call(self, task, silence_s: float, say, cancel) -> Outcome:
        out = self._ensure().call(task, silence_s=silence_s, on_event=say, cancel=cancel)
        if out.kind == "cancelled":
            self._retire("cancelled", "the task was cancelled")
            raise Cancelled("cancelled; the worker running it was stopped")
        if out.kind in ("died", "hung"):
            self._retire(out.kind, out.message)
        elif out.wedged:
            self._retire("wedged", out.wedged)
        if out.kind == "failed" and out.wedged:
            # An exception after the GPU context was lost: a GPU fault like any other.
            return Outcome("died", message=f"the worker failed after losing its GPU context "
                                           f"({out.message})", events=out.events)
        if out.kind == "failed":
            raise SupervisorError(out.message, str(out.value))
        return out

    # -- compile -----------------------------------------------------------------------------

    def compile(self, variants: Sequence[Variant],
                cancel: Optional[threading.Event] = None) -> list[CompileReport]:
        """Resource usage or errors of each variant, compiled by the worker for its GPU."""
        out = self._call(CompileTask(tuple(variants)),
                         self.limits.silence_s(self.limits.first_kernel_timeout_s), None, cancel)
        if out.kind == "done":
            return list(out.value)
        return [unknown_compile(v.label, out.message) for v in variants]

    # -- evaluate ----------------------------------------------------------------------------

    def evaluate(self, spec: EvaluateSpec, on_event: OnEvent = None,
                 cancel: Optional[threading.Event] = None) -> Evaluation:
        """The evaluation of ``spec`` (see the module doc). Raises ``Cancelled``,
        ``SupervisorError`` (the worker raised, e.g. ``ValueError`` for a malformed request),
        ``WorkerUnavailable`` and ``WorkerStartError``. ``on_event`` gets the worker's
        ``gpu_runner.events`` and the supervisor's own ``Note``s (probe, time limit, a
        worker replaced)."""
        say = emit_to(on_event)
        probe = None
        kernel_timeout = self.limits.first_kernel_timeout_s
        if spec.candidates:
            probe = self._probe(spec, say, cancel)
            if probe.error or probe.baseline is None:
                return probe
            kernel_timeout = self.limits.kernel_timeout_s(probe.baseline.median_us)
            say(Note(f"kernel time limit {kernel_timeout:g} s (baseline median "
                     f"{probe.baseline.median_us:.1f} us)"))
        return _GroupRun(self, spec, kernel_timeout, say, cancel, probe).run()

    def _probe(self, spec: EvaluateSpec, say, cancel) -> Evaluation:
        problem = replace(spec.problem, cases=spec.problem.cases[:1],
                          seeds=spec.problem.seeds[:1])
        base = replace(spec.baseline, launches=spec.baseline.launches[:1])
        probe = EvaluateSpec(problem, base, (),
                             repetitions=min(PROBE_REPETITIONS, spec.repetitions),
                             warmup=min(1, spec.warmup),
                             time_budget_s=min(PROBE_BUDGET_S, spec.time_budget_s))
        say(Note("probe: the baseline alone, to set the kernel time limit"))
        first = self.limits.first_kernel_timeout_s
        out = self._call(EvaluateTask(probe, first), self.limits.silence_s(first), say, cancel)
        if out.kind != "done":
            return self.baseline_lost(spec.baseline, out)
        return out.value

    def baseline_lost(self, baseline: Variant, out: Outcome) -> Evaluation:
        """The evaluation's end when the baseline itself killed or silenced a worker."""
        verb = "die" if out.kind == "died" else "stop answering"
        return Evaluation(device=self.info, baseline_compile=unknown_compile(baseline.label,
                                                                              out.message),
                          baseline=None,
                          error=f"the baseline made the GPU worker {verb}: {out.message}")


class _GroupRun:
    """Step 2 of ``Supervisor.evaluate``: the candidates in groups until each has a result."""

    def __init__(self, sup: Supervisor, spec: EvaluateSpec, kernel_timeout_s: float, say,
                 cancel, probe: Optional[Evaluation]):
        self.sup, self.spec, self.kt = sup, spec, kernel_timeout_s
        self.say, self.cancel = say, cancel
        self.probe = probe
        self.results: dict[str, CandidateResult] = {}
        self.errors: list[str] = []
        self.first: Optional[Evaluation] = None
        self.baseline_alone_ok = False

    def _run(self, group: Sequence[Variant]) -> Outcome:
        task = EvaluateTask(self.spec.with_candidates(group), self.kt)
        return self.sup._call(task, self.sup.limits.silence_s(self.kt), self.say,  # noqa: SLF001
                              self.cancel)

    def run(self) -> Evaluation:
        queue: deque[list[Variant]] = deque([list(self.spec.candidates)])
        while queue:
            group = queue.popleft()
            out = self._run(group)
            if out.kind == "done":
                ev: Evaluation = out.value
                if not ev.baseline_compile.ok or (group and not ev.candidates) or \
                        (not group and ev.error):
                    return ev  # the baseline failed: nothing to judge against
                again = self._take(group, ev, bool(out.wedged))
                if again:
                    self.say(Note(f"{faulted_words(group, ev, bool(out.wedged))}{len(again)} "
                                  f"candidate(s) could not be finished after {out.wedged}; "
                                  f"evaluating them again in a fresh worker"))
                    if len(again) < len(group):
                        queue.appendleft(again)
                    elif len(group) > 1:
                        self._split(queue, group, ())
                    else:  # alone and still displaced: the baseline wedged it; keep the verdict
                        self.results[group[0].label] = ev.candidates[0]
                        self.errors.append(ev.error)
                continue
            if not group:
                return self.sup.baseline_lost(self.spec.baseline, out)
            self.say(Note(f"{out.message} while evaluating "
                          f"{', '.join(v.label for v in group)}; worker replaced"))
            if len(group) > 1:
                self._split(queue, group, out.events)
                continue
            lost = self._baseline_alone()
            if lost is not None:
                return lost
            v = group[0]
            self.results[v.label] = (crashed(v, out.message) if out.kind == "died"
                                     else hung(v, out.message, self.kt))
        return self._assemble()

    def _take(self, group, ev: Evaluation, wedged: bool) -> list[Variant]:
        """Keep the final results of a returned group; the displaced candidates, in order."""
        self._keep_reference(ev)
        again = []
        for v, r in zip(group, ev.candidates, strict=True):
            if displaced(r, wedged):
                again.append(v)
            else:
                self.results[v.label] = r
        if ev.error and not wedged:
            self.errors.append(ev.error)
        return again

    @staticmethod
    def _split(queue, group, events) -> None:
        suspect = suspect_from_events(events, group)
        if suspect is not None:
            parts = [[suspect], [v for v in group if v is not suspect]]
        else:
            half = len(group) // 2
            parts = [group[:half], group[half:]]
        for part in reversed(parts):
            queue.appendleft(part)

    def _baseline_alone(self) -> Optional[Evaluation]:
        """None when the baseline alone (full problem) leaves its worker alive; else the
        evaluation's end, blaming the baseline. Runs once per evaluation."""
        if self.baseline_alone_ok:
            return None
        self.say(Note("checking that the baseline alone does not harm the worker"))
        out = self._run(())
        if out.kind != "done":
            return self.sup.baseline_lost(self.spec.baseline, out)
        if out.value.error:
            return out.value
        self.baseline_alone_ok = True
        self._keep_reference(out.value)
        return None

    def _keep_reference(self, ev: Evaluation) -> None:
        """Keep the first returned evaluation that timed the baseline (a group whose worker
        wedged returns none), else the first returned at all."""
        if self.first is None or (self.first.baseline is None and ev.baseline is not None):
            self.first = ev

    def _assemble(self) -> Evaluation:
        ref = self.first or self.probe
        info = ref.device if ref is not None else self.sup.info
        base_compile = (ref.baseline_compile if ref is not None
                        else unknown_compile(self.spec.baseline.label, "no run finished"))
        baseline = self.first.baseline if self.first is not None else None
        if baseline is None and self.probe is not None:
            baseline = self.probe.baseline  # the probe's short timing loop, better than none
        return assemble(info, base_compile, baseline, self.spec.candidates, self.results,
                        self.errors)
