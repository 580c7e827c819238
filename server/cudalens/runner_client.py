"""The one place the editor side reaches the GPU runner.

For now the runner runs in-process through its library API (``gpu_runner.runner``); the
HTTP service replaces this module's internals later without changing its callers. pycuda is
imported only when a runner is opened, so everything else works on machines without CUDA.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from gpu_runner.problem import Problem, Variant
from gpu_runner.report import DeviceInfo, Evaluation


class RunnerUnavailable(RuntimeError):
    """No GPU runner can be used here; the message says what is missing and what is needed."""


class RunnerClient:
    """Evaluates variants of a kernel on the local GPU.

    Raises:
        RunnerUnavailable: when pycuda, the NVIDIA driver or a GPU is missing.
    """

    def __init__(self, device_index: int = 0):
        try:
            from gpu_runner.runner import NoGpuError, Runner
        except ImportError as exc:  # pragma: no cover - the runner module imports pycuda lazily
            raise RunnerUnavailable(f"the GPU runner could not be loaded: {exc}") from exc
        try:
            self._runner = Runner(device_index=device_index)
        except NoGpuError as exc:
            raise RunnerUnavailable(str(exc)) from exc

    def device_info(self) -> DeviceInfo:
        return self._runner.device_info()

    def evaluate(self, problem: Problem, baseline: Variant, candidates: Sequence[Variant], *,
                 repetitions: int = 50,
                 progress: Optional[Callable[[str], None]] = None) -> Evaluation:
        return self._runner.evaluate(problem, baseline, list(candidates),
                                     repetitions=repetitions, progress=progress)
