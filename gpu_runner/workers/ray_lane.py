"""GPUs of a Ray cluster as the runner's devices: one actor per GPU (``num_gpus=1``).

Each ``GpuActor`` holds one GPU (Ray sets its ``CUDA_VISIBLE_DEVICES``, so the GPU is device 0
inside it) and runs the very ``Supervisor`` the local runner uses, with its worker process on
the actor's node: the same probe, verification, isolation (a fault costs one candidate, the
worker is replaced on that node) and timing. ``RaySupervisor`` is the runner's side of one
actor and has the ``Supervisor`` calls the pool uses (``start``, ``evaluate``, ``compile``,
``close``, ``info``, ``ready``), so the pool, the split of an evaluation (``split``), the HTTP
API and the job events are the same as on one host.

An actor that dies (``ray.kill``, its node lost) raises ``WorkerLost`` from ``evaluate``: not a
verdict on any candidate; the split run gives that actor's candidates to another GPU. The next
call on the lane starts a fresh actor, which Ray places on any node with a free GPU.

Cancel: the actor is threaded (``max_concurrency``), so ``cancel`` reaches it while it evaluates;
its supervisor kills the worker and the evaluation ends ``Cancelled``. Progress lines are
polled from the actor every ``POLL_S`` seconds.

Captured inputs (``gpu_runner.captured``) that a request names by a path on the runner's machine
are read here and sent inline (``captured.inline_paths``): the actor's node may be another
machine. Profiles (ncu) and sanitizer runs (compute-sanitizer) run in the actor too
(``run_tool``), on its GPU (device 0 inside it), with the tool found on the actor's node; a
tool's own error (``ProfileError``, ``SanitizeError``) comes back with its message and kind.

Needs ``ray`` (``pip install 'cudalens[ray]'``) here and cudalens with pycuda on every GPU node
(the actor imports ``gpu_runner``); nothing imports ray until a runner is started
with ``--ray``.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Callable, Optional, Sequence

from gpu_runner.captured import inline_paths
from gpu_runner.problem import Problem, Variant
from gpu_runner.report import CompileReport, Evaluation
from gpu_runner.workers.backend import WorkerConfig
from gpu_runner.workers.handle import WorkerLost, WorkerStartError
from gpu_runner.workers.limits import Limits
from gpu_runner.workers.protocol import EvaluateSpec, Ready
from gpu_runner.workers.supervisor import (Cancelled, Supervisor, SupervisorError, WorkerEvent,
                                           WorkerUnavailable)

POLL_S = 0.1
RAY_EXTRA = "pip install 'cudalens[ray]'"


def _ray():
    try:
        import ray  # noqa: PLC0415 (optional dependency)
    except ImportError as exc:
        raise RuntimeError(f"--ray needs the ray package ({RAY_EXTRA}): {exc}") from None
    return ray


def connect(address: str, gpus: Optional[int] = None) -> int:
    """Join the Ray cluster at ``address`` ("local": start one here) unless this process has
    joined one; how many GPU lanes to run: ``gpus``, else the cluster's GPU count. Raises
    ``RuntimeError`` without ray or without a GPU in the cluster."""
    global _JOINED
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address=None if address == "local" else address, log_to_driver=False)
        _JOINED = True
    count = gpus if gpus is not None else int(ray.cluster_resources().get("GPU", 0))
    if count < 1:
        resources = ray.cluster_resources()
        disconnect()
        raise RuntimeError(f"the Ray cluster at {address} has no GPU (cluster resources: "
                           f"{resources})")
    return count


_JOINED = False  # whether ``connect`` initialized Ray in this process


def disconnect() -> None:
    """Leave the cluster ``connect`` joined (a local instance it started stops); nothing when
    Ray was initialized by someone else (a test, an embedding program)."""
    global _JOINED
    if _JOINED:
        _JOINED = False
        _ray().shutdown()


class GpuActorImpl:
    """The body of the Ray actor (``actor_class`` makes it remote): a ``Supervisor`` on the
    actor's one GPU."""

    def __init__(self, factory, limits: Limits):
        self._sup = Supervisor(WorkerConfig(device_index=0, factory=factory), limits)
        self._cancel = threading.Event()
        self._lines: list[str] = []
        self._sup.start()

    def ready(self) -> Ready:
        return self._sup.ready

    def evaluate(self, spec: EvaluateSpec):
        """("done", Evaluation) | ("cancelled", "") | ("failed", message, kind) |
        ("lost", message): the worker could not be restarted on this node."""
        self._cancel.clear()
        self._lines = []
        try:
            return ("done", self._sup.evaluate(spec, self._lines.append, self._cancel))
        except Cancelled:
            return ("cancelled", "")
        except SupervisorError as exc:
            return ("failed", str(exc), exc.kind)
        except (WorkerStartError, WorkerUnavailable) as exc:
            return ("lost", str(exc))

    def progress(self, since: int) -> list[str]:
        return self._lines[since:]

    def cancel(self) -> None:
        self._cancel.set()

    def compile(self, variants) -> list[CompileReport]:
        return self._sup.compile(variants)

    def run_tool(self, fn: Callable, problem: Problem, variant: Variant, timeout_s: float):
        """``fn(problem, variant, device_index=0, timeout_s=)`` (a profile or a sanitizer run,
        ``pool.Slot``) on this actor's GPU: ("done", its value) | ("raised", the exception's
        class, message, ``kind`` or None): an exception is rebuilt on the runner's side, so its
        ``kind`` (which pickling an exception drops) survives."""
        try:
            return ("done", fn(problem, variant, device_index=0, timeout_s=timeout_s))
        except Exception as exc:  # noqa: BLE001 - handed back to the request
            return ("raised", type(exc), str(exc), getattr(exc, "kind", None))

    def close(self) -> None:
        self._sup.close()


def _rebuild(cls: type, message: str, kind: Optional[str]) -> Exception:
    """The exception ``run_tool`` reported, as its own class where that can be made."""
    try:
        return cls(message, kind) if kind is not None else cls(message)
    except Exception:  # noqa: BLE001 - a class with another constructor
        return RuntimeError(f"{cls.__name__}: {message}")


_ACTOR = None


def actor_class():
    """``GpuActorImpl`` as a Ray actor class holding one GPU (made once per process)."""
    global _ACTOR
    if _ACTOR is None:
        _ACTOR = _ray().remote(num_gpus=1, num_cpus=0, max_concurrency=4,
                               max_restarts=0)(GpuActorImpl)
    return _ACTOR


class RaySupervisor:
    """The runner's side of lane ``index``: one ``GpuActor``, started again after a loss.

    Raises ``WorkerStartError`` from ``start`` when the actor does not become ready within
    ``limits.startup_s`` and ``WorkerLost`` from ``evaluate``/``compile`` when it dies."""

    def __init__(self, index: int, factory: Optional[Callable], limits: Limits):
        self.index, self.factory, self.limits = index, factory, limits
        self.ready: Optional[Ready] = None
        self.info = None
        self.events: list[WorkerEvent] = []
        self.actor = None

    @property
    def worker_pid(self) -> Optional[int]:
        return self.ready.pid if self.ready is not None and self.actor is not None else None

    def start(self) -> Ready:
        ray = _ray()
        if self.actor is not None:
            return self.ready
        actor = actor_class().remote(self.factory, self.limits)
        try:
            ready = ray.get(actor.ready.remote(), timeout=self.limits.startup_s)
        except Exception as exc:  # noqa: BLE001 - Ray's errors: no GPU free, actor died, timeout
            ray.kill(actor)
            raise WorkerStartError(f"the Ray actor for GPU lane {self.index} did not start: "
                                   f"{type(exc).__name__}: {exc}") from None
        self.actor, self.ready = actor, ready
        if self.info is None:
            self.info = ready.info
        self.events.append(WorkerEvent("started", ready.pid))
        return ready

    def _lost(self, exc: BaseException) -> WorkerLost:
        pid = self.ready.pid if self.ready else 0
        self.actor = None
        self.events.append(WorkerEvent("lost", pid, str(exc)))
        return WorkerLost(f"the Ray actor of GPU lane {self.index} was lost: "
                          f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")

    def evaluate(self, spec: EvaluateSpec, progress=None,
                 cancel: Optional[threading.Event] = None) -> Evaluation:
        ray = _ray()
        say = progress or (lambda _m: None)
        actor = self.start() and self.actor
        ref = actor.evaluate.remote(replace(spec, problem=inline_paths(spec.problem)))
        since, asked = 0, False
        try:
            while True:
                done, _ = ray.wait([ref], timeout=POLL_S)
                for line in ray.get(actor.progress.remote(since)):
                    say(line)
                    since += 1
                if done:
                    answer = ray.get(ref)
                    break
                if cancel is not None and cancel.is_set() and not asked:
                    actor.cancel.remote()
                    asked = True
        except ray.exceptions.RayActorError as exc:
            raise self._lost(exc) from None
        kind = answer[0]
        if kind == "done":
            return answer[1]
        if kind == "cancelled":
            raise Cancelled("cancelled; the worker running it was stopped")
        if kind == "failed":
            raise SupervisorError(answer[1], answer[2])
        self.close()
        raise WorkerStartError(answer[1])

    def compile(self, variants: Sequence[Variant],
                cancel: Optional[threading.Event] = None) -> list[CompileReport]:
        ray = _ray()
        try:
            return ray.get(self.start() and self.actor.compile.remote(list(variants)))
        except ray.exceptions.RayActorError as exc:
            raise self._lost(exc) from None

    def run_tool(self, fn: Callable, problem: Problem, variant: Variant, timeout_s: float):
        """``fn`` run in the actor on its GPU (``GpuActorImpl.run_tool``): its value, or what it
        raised. Raises ``WorkerLost`` when the actor dies."""
        ray = _ray()
        try:
            answer = ray.get(self.start() and self.actor.run_tool.remote(
                fn, inline_paths(problem), variant, timeout_s))
        except ray.exceptions.RayActorError as exc:
            raise self._lost(exc) from None
        if answer[0] == "done":
            return answer[1]
        raise _rebuild(*answer[1:])

    def close(self) -> None:
        ray = _ray()
        actor, self.actor = self.actor, None
        if actor is None:
            return
        try:
            ray.get(actor.close.remote(), timeout=self.limits.stop_s + 5)
        except Exception:  # noqa: BLE001 - it is going away either way
            pass
        ray.kill(actor)
        self.events.append(WorkerEvent("stopped", self.ready.pid if self.ready else 0))
