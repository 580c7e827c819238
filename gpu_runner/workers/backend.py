"""What a worker process runs tasks on: the ``Backend`` interface and ``RunnerBackend``, the
real one, a ``gpu_runner.runner.Runner`` on one GPU.

The supervisor never sees a backend; it only sees the worker process. Tests inject other
backends (one that exits, one that hangs) through ``WorkerConfig.factory``: a picklable
callable ``factory(config) -> Backend`` called in the child process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Protocol, Sequence

from gpu_runner.problem import Variant
from gpu_runner.report import CompileReport, DeviceInfo, Evaluation
from gpu_runner.workers.protocol import EvaluateTask


class Backend(Protocol):
    """One GPU's compile, verify and time operations, used from one thread of one process.

    The constructor raises ``gpu_runner.session.NoGpuError`` when no GPU can be used."""

    def device_info(self) -> DeviceInfo: ...

    def device_count(self) -> int: ...

    def compile(self, variants: Sequence[Variant]) -> list[CompileReport]: ...

    def evaluate(self, task: EvaluateTask,
                 on_event: Callable[[object], None]) -> Evaluation:
        """The evaluation of ``task``, calling ``on_event`` with each ``gpu_runner.events``
        event as ``Runner.evaluate`` does."""
        ...

    def wedged(self) -> str:
        """Why the GPU can no longer be used in this process, or "" while it can."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class WorkerConfig:
    """How to make a worker's backend: the device, the nvcc cache directory that the CPU
    compile pool fills (``precompile``; None: pycuda's own per-user cache) and the backend
    factory (None: ``RunnerBackend``)."""

    device_index: int = 0
    compile_cache_dir: Optional[str] = None
    factory: Optional[Callable[["WorkerConfig"], Backend]] = None

    def make_backend(self) -> Backend:
        return (self.factory or RunnerBackend)(self)


class RunnerBackend:
    """``Backend`` on a real GPU through ``gpu_runner.runner.Runner``.

    Raises ``NoGpuError`` (from ``Runner``) when pycuda, the driver or a GPU is missing.
    """

    def __init__(self, config: WorkerConfig):
        from gpu_runner.runner import Runner  # noqa: PLC0415 (imports pycuda lazily itself)

        self._runner = Runner(config.device_index, compile_cache_dir=config.compile_cache_dir)
        self._cache_dir = config.compile_cache_dir

    def device_info(self) -> DeviceInfo:
        return self._runner.device_info()

    def device_count(self) -> int:
        from gpu_runner.session import import_driver  # noqa: PLC0415

        return int(import_driver().Device.count())

    def compile(self, variants: Sequence[Variant]) -> list[CompileReport]:
        from gpu_runner.compiler import compile_variant  # noqa: PLC0415

        # Runner has no public compile call yet; its session is the one GPU context of this
        # process (contract request: ``Runner.compile(variant) -> CompileReport``).
        session = self._runner._session  # noqa: SLF001
        session.check_usable()
        with session.active():
            return [compile_variant(session, v, cache_dir=self._cache_dir).report
                    for v in variants]

    def evaluate(self, task: EvaluateTask, on_event: Callable[[object], None]) -> Evaluation:
        spec = task.spec
        self._runner.launch_timeout_s = task.kernel_timeout_s
        return self._runner.evaluate(spec.problem, spec.baseline, list(spec.candidates),
                                     repetitions=spec.repetitions, warmup=spec.warmup,
                                     time_budget_s=spec.time_budget_s, on_event=on_event)

    def wedged(self) -> str:
        # Contract request: a public ``Runner.wedged``; the session's flag is the truth.
        return self._runner._session.wedged  # noqa: SLF001

    def close(self) -> None:
        self._runner.close()
