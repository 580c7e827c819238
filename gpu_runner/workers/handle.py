"""The parent's side of one worker process: start it, send a task and watch it, stop it.

``WorkerHandle.call`` returns an ``Outcome`` instead of raising for what a worker can do to
us: answer (``done``/``failed``), die (``died``: the process ended or closed its pipe before
answering, e.g. a segfault or ``os._exit``), go silent for longer than the allowed time
(``hung``: it is killed), or be cancelled by the caller (``cancelled``: it is killed).
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

from gpu_runner.workers.backend import WorkerConfig
from gpu_runner.workers.protocol import (Done, Progress, Ready, StartFailed, Stop, TaskFailed,
                                         ToWorker, Unavailable)
from gpu_runner.workers.worker import worker_main

POLL_S = 0.05  # how often a waiting parent looks at the process and the cancel flag


class WorkerUnavailable(RuntimeError):
    """The worker found no usable GPU; the message is the worker's (what is missing)."""


class WorkerStartError(RuntimeError):
    """The worker process did not start or did not report ready in time."""


class WorkerLost(RuntimeError):
    """A remote worker went away with its host (a Ray actor or its node was lost): not the
    fault of what it was running; its work goes to another GPU (``split``)."""


@dataclass(frozen=True)
class Outcome:
    """What became of one task: ``kind`` is ``done``, ``failed``, ``died``, ``hung`` or
    ``cancelled``. ``value``: the result (``done``); ``message``: why (the others);
    ``wedged``: the worker's GPU is unusable after this task (``done``/``failed``);
    ``events``: the ``gpu_runner.events`` events received, in order."""

    kind: str
    value: object = None
    message: str = ""
    wedged: str = ""
    events: tuple[object, ...] = ()


def describe_exit(code: Optional[int]) -> str:
    """A process exit code in words: ``exit code 3``, ``killed by signal SIGSEGV``."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class WorkerHandle:
    """One spawned worker process for ``config.device_index``.

    ``start`` blocks until the worker is ready and raises ``WorkerUnavailable`` (no GPU) or
    ``WorkerStartError`` (crashed, failed or silent for ``startup_s`` seconds while starting).
    """

    def __init__(self, config: WorkerConfig, *, startup_s: float = 120.0, stop_s: float = 5.0):
        self.config = config
        self.startup_s = startup_s
        self.stop_s = stop_s
        self.ready: Optional[Ready] = None
        self._proc = None
        self._conn = None

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def start(self) -> Ready:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe(duplex=True)
        self._proc = ctx.Process(target=worker_main, args=(child, self.config), daemon=True,
                                 name=f"cudalens-gpu{self.config.device_index}")
        self._proc.start()
        child.close()
        self._conn = parent
        deadline = time.monotonic() + self.startup_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise WorkerStartError(f"the GPU worker for device {self.config.device_index} "
                                       f"did not report ready within {self.startup_s:g} s")
            try:
                if self._conn.poll(min(remaining, POLL_S)):
                    msg = self._conn.recv()
                    break
            except (EOFError, OSError):
                msg = None
                break
            if not self._proc.is_alive() and not self._conn.poll(0):
                msg = None
                break
        if isinstance(msg, Ready):
            self.ready = msg
            return msg
        self.kill()
        if isinstance(msg, Unavailable):
            raise WorkerUnavailable(msg.message)
        if isinstance(msg, StartFailed):
            raise WorkerStartError(msg.message)
        raise WorkerStartError(f"the GPU worker for device {self.config.device_index} ended "
                               f"while starting ({describe_exit(self._proc.exitcode)})")

    def call(self, task: ToWorker, *, silence_s: float,
             on_event: Optional[Callable[[object], None]] = None,
             cancel: Optional[threading.Event] = None) -> Outcome:
        """Send ``task`` and wait for its answer. The worker is ``hung`` when it sends nothing
        (no event either) for ``silence_s`` seconds; then, and on ``cancel``, it is
        killed. Needs a started worker."""
        lines: list[str] = []
        if self._conn is None:
            return self._died(lines)
        try:
            self._conn.send(task)
        except (OSError, ValueError):
            return self._died(lines)
        last = time.monotonic()
        while True:
            if cancel is not None and cancel.is_set():
                self.kill()
                return Outcome("cancelled", message="cancelled", events=tuple(lines))
            try:
                has = self._conn.poll(POLL_S)
                msg = self._conn.recv() if has else None
            except (EOFError, OSError):
                return self._died(lines)
            if msg is None:
                if not self._proc.is_alive():
                    return self._died(lines)
                if time.monotonic() - last > silence_s:
                    self.kill()
                    return Outcome("hung", message=f"the worker sent nothing for {silence_s:g} s",
                                   events=tuple(lines))
                continue
            last = time.monotonic()
            if isinstance(msg, Progress):
                lines.append(msg.event)
                if on_event is not None:
                    on_event(msg.event)
            elif isinstance(msg, Done):
                return Outcome("done", value=msg.value, wedged=msg.wedged, events=tuple(lines))
            elif isinstance(msg, TaskFailed):
                return Outcome("failed", value=msg.kind, message=msg.message, wedged=msg.wedged,
                               events=tuple(lines))

    def _died(self, lines) -> Outcome:
        self._proc.join(self.stop_s)
        code = self._proc.exitcode
        if code is None:  # pipe closed but the process lingers
            self.kill()
            code = self._proc.exitcode
        return Outcome("died", message=f"the worker process (pid {self._proc.pid}) ended "
                                       f"without answering ({describe_exit(code)})",
                       events=tuple(lines))

    def stop(self) -> None:
        """Ask the worker to close its GPU context and exit; kill it if it does not."""
        if self._proc is None:
            return
        if self._proc.is_alive() and self._conn is not None:
            try:
                self._conn.send(Stop())
            except (OSError, ValueError):
                pass
            self._proc.join(self.stop_s)
        self.kill()

    def kill(self) -> None:
        """End the process now (SIGTERM, then SIGKILL after ``stop_s``) and wait for it, so a
        fresh worker does not share the GPU with a dying one's kernel."""
        proc = self._proc
        if proc is None:
            return
        if proc.is_alive():
            proc.terminate()
            proc.join(self.stop_s)
        if proc.is_alive():
            proc.kill()
            proc.join(self.stop_s)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
