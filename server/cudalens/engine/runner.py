"""The ``Runner`` protocol: what the engine needs of a GPU runner, and the in-process one.

Two implementations: ``cudalens.runner_client.RunnerClient`` (HTTP to a runner service: the
service's supervisor isolates kernel faults in worker processes) and ``InProcessRunner`` (a
worker backend called in this process: no service, no isolation; for scripts on a GPU box
and for tests with a model backend). Tests add their own (``tests/data/lsp/model_runner.py``).

A runner says what it can do with ``can_profile`` and ``can_sanitize``; ``try_profile`` and
``sanitize`` of one that cannot answer ``kind="unsupported"``. See docs/architecture.md, "The
engine" and "How to add things: a runner backend".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Protocol, Sequence, runtime_checkable

from gpu_runner.ncu_csv import Profile
from gpu_runner.problem import Problem, Variant
from gpu_runner.report import DeviceInfo, Evaluation
from gpu_runner.sanitize import SanitizeReport

__all__ = ["Runner", "ProfileAnswer", "SanitizeAnswer", "InProcessRunner", "WithoutTools",
           "UNSUPPORTED"]

UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class ProfileAnswer:
    """What the runner answered to a profile request: the ``profile``, or None with ``kind``
    and ``reason`` saying why there is none (``gpu_runner.service.schema.ProfileResponse``)."""

    profile: Optional[Profile]
    kind: str = ""
    reason: str = ""


@dataclass(frozen=True)
class SanitizeAnswer:
    """What the runner answered to a sanitizer request: the ``report`` (its findings, maybe
    none), or None with ``kind`` and ``reason`` saying why there is none
    (``gpu_runner.service.schema.SanitizeResponse``)."""

    report: Optional[SanitizeReport]
    kind: str = ""
    reason: str = ""


@runtime_checkable
class Runner(Protocol):
    """Verifies and times variants of a kernel on one device.

    ``where``: the runner in words (``the GPU runner at http://...``); ``provenance``: how its
    numbers were made, for the results store ("" : ``measured by {where} on {device}``).
    """

    where: str
    provenance: str
    can_profile: bool
    can_sanitize: bool

    def device_info(self) -> DeviceInfo:
        """The device's facts (name, SMs, L2, copy bandwidth measured on it)."""
        ...

    def evaluate(self, problem: Problem, baseline: Variant, candidates: Sequence[Variant], *,
                 repetitions: int = 50,
                 on_event: Optional[Callable[[object], None]] = None) -> Evaluation:
        """Compile, verify and time ``candidates`` against ``baseline`` (``Evaluation``'s
        candidates in the order given), calling ``on_event`` with each
        ``gpu_runner.events`` event; an exception ``on_event`` raises stops the evaluation
        and propagates. Raises ``cudalens.errors.CudalensError`` subclasses when the runner
        refuses or cannot finish."""
        ...

    def try_profile(self, problem: Problem, variant: Variant, *,
                    timeout_s: float = 180.0) -> ProfileAnswer:
        """An Nsight Compute profile of one launch of ``variant``, or why there is none."""
        ...

    def sanitize(self, problem: Problem, variant: Variant, *,
                 tools: Optional[Sequence[str]] = None,
                 timeout_s: float = 120.0) -> SanitizeAnswer:
        """compute-sanitizer's findings on one launch of ``variant``, or why there are none."""
        ...

    def close(self) -> None:
        """Release the connection or the device."""
        ...


class InProcessRunner:
    """A ``Runner`` on a worker backend in this process (``gpu_runner.workers.backend.
    Backend``: ``RunnerBackend`` on a GPU, or a test's model backend), without the service.

    No isolation: a kernel that faults leaves the device unusable in this process (the
    service's supervisor exists for that). ``kernel_timeout_s`` bounds every kernel launch;
    ``profile_fn`` and ``sanitize_fn`` default to ``gpu_runner.profile.profile_variant`` and
    ``gpu_runner.sanitize.sanitize_variant`` (ncu and compute-sanitizer in their own
    processes); pass ``tools=False`` for a backend with no GPU behind it (``can_profile`` and
    ``can_sanitize`` are then False).
    """

    def __init__(self, backend, *, kernel_timeout_s: float = 10.0, device_index: int = 0,
                 tools: bool = True, profile_fn: Optional[Callable] = None,
                 sanitize_fn: Optional[Callable] = None,
                 where: str = "the in-process GPU runner", provenance: str = ""):
        self.backend = backend
        self.kernel_timeout_s = kernel_timeout_s
        self.device_index = device_index
        self.can_profile = self.can_sanitize = tools
        self._profile_fn, self._sanitize_fn = profile_fn, sanitize_fn
        self.where, self.provenance = where, provenance

    @classmethod
    def on_gpu(cls, device_index: int = 0, **kw) -> "InProcessRunner":
        """The real runner on GPU ``device_index`` of this machine.

        Raises:
            gpu_runner.session.NoGpuError: pycuda, the driver or a GPU is missing.
        """
        from gpu_runner.workers.backend import RunnerBackend, WorkerConfig  # noqa: PLC0415

        return cls(RunnerBackend(WorkerConfig(device_index=device_index)),
                   device_index=device_index, **kw)

    def device_info(self) -> DeviceInfo:
        return self.backend.device_info()

    def evaluate(self, problem: Problem, baseline: Variant, candidates: Sequence[Variant], *,
                 repetitions: int = 50, warmup: int = 3, time_budget_s: float = 60.0,
                 on_event: Optional[Callable[[object], None]] = None) -> Evaluation:
        from gpu_runner.workers.protocol import EvaluateSpec, EvaluateTask  # noqa: PLC0415

        spec = EvaluateSpec(problem, baseline, tuple(candidates), repetitions=repetitions,
                            warmup=warmup, time_budget_s=time_budget_s)
        return self.backend.evaluate(EvaluateTask(spec, self.kernel_timeout_s),
                                     on_event or (lambda _e: None))

    def try_profile(self, problem: Problem, variant: Variant, *,
                    timeout_s: float = 180.0) -> ProfileAnswer:
        if not self.can_profile:
            return ProfileAnswer(None, UNSUPPORTED, f"{self.where} cannot profile")
        from gpu_runner.profile import ProfileError, profile_variant  # noqa: PLC0415

        fn = self._profile_fn or profile_variant
        try:
            return ProfileAnswer(fn(problem, variant, device_index=self.device_index,
                                    timeout_s=timeout_s))
        except ProfileError as exc:
            return ProfileAnswer(None, exc.kind, str(exc))

    def sanitize(self, problem: Problem, variant: Variant, *,
                 tools: Optional[Sequence[str]] = None,
                 timeout_s: float = 120.0) -> SanitizeAnswer:
        if not self.can_sanitize:
            return SanitizeAnswer(None, UNSUPPORTED, f"{self.where} cannot run "
                                                     f"compute-sanitizer")
        from gpu_runner.sanitize import TOOLS, SanitizeError, sanitize_variant  # noqa: PLC0415

        fn = self._sanitize_fn or sanitize_variant
        try:
            return SanitizeAnswer(fn(problem, variant, device_index=self.device_index,
                                     timeout_s=timeout_s, tools=tuple(tools or TOOLS)))
        except SanitizeError as exc:
            return SanitizeAnswer(None, exc.kind, str(exc))

    def close(self) -> None:
        self.backend.close()


class WithoutTools:
    """Defaults for a ``Runner`` that cannot profile or sanitize (a model or a recording:
    no GPU behind it): subclass it and write ``device_info`` and ``evaluate``."""

    where = "the GPU runner"
    provenance = ""
    can_profile = False
    can_sanitize = False

    def try_profile(self, problem: Problem, variant: Variant, *,
                    timeout_s: float = 180.0) -> ProfileAnswer:
        return ProfileAnswer(None, UNSUPPORTED, f"{self.where} cannot profile")

    def sanitize(self, problem: Problem, variant: Variant, *,
                 tools: Optional[Sequence[str]] = None,
                 timeout_s: float = 120.0) -> SanitizeAnswer:
        return SanitizeAnswer(None, UNSUPPORTED, f"{self.where} cannot run compute-sanitizer")

    def close(self) -> None:
        pass
