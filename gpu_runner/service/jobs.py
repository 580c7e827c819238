"""Evaluation jobs: their state, events and result, kept in memory.

A job is ``queued`` until its device's worker takes it, then ``running``, then ``done`` (with
an ``Evaluation``), ``failed`` (with a message) or ``cancelled``. The store keeps the last
``keep_finished`` finished jobs and, per job, the last ``keep_lines`` events
(``gpu_runner.events``; their numbering goes on, so a client asking ``since=N`` never sees
one twice). The status gives each event twice at the same index: typed (``events``) and as
its text (``progress``, for a person reading the JSON).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict, deque
from typing import Optional

from gpu_runner.report import Evaluation
from gpu_runner.service.schema import FINAL_STATES, JobStatus
from gpu_runner.workers.protocol import EvaluateSpec


class Job:
    """One evaluation request. Thread-safe: the pool's threads report, requests read."""

    def __init__(self, spec: EvaluateSpec, device: Optional[int], keep_lines: int = 2000,
                 devices: Optional[tuple[int, ...]] = None):
        self.id = uuid.uuid4().hex
        self.spec = spec
        self.device = device
        self.devices = devices  # split over these GPUs (see gpu_runner.workers.split)
        self.cancel = threading.Event()
        self.precompiled: tuple = ()  # futures of the CPU compiles (set by the pool)
        self.state = "queued"
        self.result: Optional[Evaluation] = None
        self.error = ""
        self.error_kind = ""
        self.created_at = time.time()
        self.started_at = 0.0
        self.finished_at = 0.0
        self._lines: deque = deque(maxlen=keep_lines)
        self._dropped = 0
        self._lock = threading.Lock()
        self._final = threading.Event()

    # -- reports from the pool (see gpu_runner.workers.pool.PoolJob) ------------------------

    def started(self, device: int) -> None:
        with self._lock:
            if self.state == "queued":
                self.state, self.device, self.started_at = "running", device, time.time()

    def progress(self, event) -> None:
        """Keeps one ``gpu_runner.events`` event."""
        with self._lock:
            if len(self._lines) == self._lines.maxlen:
                self._dropped += 1
            self._lines.append(event)

    def _finish(self, state: str, **fields) -> None:
        with self._lock:
            if self.state in FINAL_STATES:
                return
            self.state = state
            for k, v in fields.items():
                setattr(self, k, v)
            self.finished_at = time.time()
        self._final.set()

    def finished(self, evaluation: Evaluation) -> None:
        self._finish("done", result=evaluation)

    def failed(self, message: str, kind: str = "error") -> None:
        self._finish("failed", error=message, error_kind=kind)

    def cancelled(self) -> None:
        self._finish("cancelled")

    # -- reads -------------------------------------------------------------------------------

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    def wait(self, timeout_s: float) -> bool:
        return self._final.wait(timeout_s)

    def request_cancel(self) -> None:
        """Cancel: a queued job ends now; a running one when its worker has been stopped."""
        self.cancel.set()
        with self._lock:
            queued = self.state == "queued"
        if queued:
            self.cancelled()

    def status(self, since: int = 0) -> JobStatus:
        with self._lock:
            first = self._dropped
            start = max(since, first)
            events = list(self._lines)[start - first:]
            return JobStatus(
                id=self.id, state=self.state, device=self.device if self.device is not None else -1,
                candidates=len(self.spec.candidates),
                progress=[e.text() for e in events], events=events, progress_from=start,
                progress_next=first + len(self._lines), result=self.result, error=self.error,
                error_kind=self.error_kind, created_at=self.created_at,
                started_at=self.started_at, finished_at=self.finished_at)


class JobStore:
    """Jobs by id, keeping the ``keep_finished`` most recently created finished ones."""

    def __init__(self, keep_finished: int = 200):
        self.keep_finished = keep_finished
        self._jobs: "OrderedDict[str, Job]" = OrderedDict()
        self._lock = threading.Lock()

    def add(self, job: Job) -> None:
        with self._lock:
            self._jobs[job.id] = job
            finished = [j for j in self._jobs.values() if j.final]
            for old in finished[:max(0, len(finished) - self.keep_finished)]:
                del self._jobs[old.id]

    def get(self, job_id: str) -> Optional[Job]:
        with self._lock:
            return self._jobs.get(job_id)

    def all(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())
