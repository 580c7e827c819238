"""Messages between the supervisor (parent) and a worker process (child), sent over a
``multiprocessing`` pipe (pickled; every field is a runner contract data class or plain data).

Parent to child: ``EvaluateTask``, ``CompileTask``, ``Stop``.
Child to parent: ``Ready`` or ``Unavailable`` or ``StartFailed`` once at start, then for each
task any number of ``Progress`` events and one ``Done`` or ``TaskFailed``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Union

from gpu_runner.problem import Problem, Variant
from gpu_runner.report import CompileReport, DeviceInfo, Evaluation


@dataclass(frozen=True)
class EvaluateSpec:
    """One evaluation as the service receives it: check and time ``candidates`` against
    ``baseline`` on ``problem``. ``repetitions``: timed rounds at most; ``warmup``: untimed
    launches of each variant first; ``time_budget_s``: wall-clock budget of a timing loop, in
    seconds (see ``Runner.evaluate``)."""

    problem: Problem
    baseline: Variant
    candidates: tuple[Variant, ...] = ()
    repetitions: int = 50
    warmup: int = 3
    time_budget_s: float = 60.0

    def with_candidates(self, candidates) -> "EvaluateSpec":
        return replace(self, candidates=tuple(candidates))


@dataclass(frozen=True)
class EvaluateTask:
    """Run ``spec`` with every kernel launch bounded by ``kernel_timeout_s`` seconds."""

    spec: EvaluateSpec
    kernel_timeout_s: float


@dataclass(frozen=True)
class CompileTask:
    """Compile each variant and report its resource usage (registers, shared memory, ...)."""

    variants: tuple[Variant, ...]


@dataclass(frozen=True)
class Stop:
    """Close the backend and exit."""


@dataclass(frozen=True)
class Ready:
    """The worker owns device ``device_index`` (of ``device_count`` visible) and is idle."""

    pid: int
    device_index: int
    device_count: int
    info: DeviceInfo


@dataclass(frozen=True)
class Unavailable:
    """No GPU can be used here (pycuda, driver or device missing); ``message`` says what."""

    message: str


@dataclass(frozen=True)
class StartFailed:
    """The worker could not start for another reason; ``message`` names it."""

    message: str


@dataclass(frozen=True)
class Progress:
    """One ``gpu_runner.events`` event of the running task."""

    event: object


@dataclass(frozen=True)
class Done:
    """A task's result: an ``Evaluation`` or a list of ``CompileReport``. ``wedged`` is why the
    worker's GPU context can no longer be used (empty when it can); a wedged worker exits
    right after sending this."""

    value: Union[Evaluation, list[CompileReport]]
    wedged: str = ""


@dataclass(frozen=True)
class TaskFailed:
    """The task raised: ``bad_request`` for a malformed request (``ValueError``), ``error``
    for anything else. ``wedged`` as in ``Done``."""

    message: str
    kind: str = "error"
    wedged: str = ""


ToWorker = Union[EvaluateTask, CompileTask, Stop]
FromWorker = Union[Ready, Unavailable, StartFailed, Progress, Done, TaskFailed]

__all__ = ["EvaluateSpec", "EvaluateTask", "CompileTask", "Stop", "Ready", "Unavailable",
           "StartFailed", "Progress", "Done", "TaskFailed", "ToWorker", "FromWorker"]
