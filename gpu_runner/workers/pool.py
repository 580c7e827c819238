"""One supervised worker per GPU, each fed from its own queue by its own thread.

``GpuPool.start`` brings up the worker of the first device in the background; its ``Ready``
says how many devices are visible, and (unless ``PoolConfig.devices`` names them) a worker is
started for each of the others. A worker that finds no GPU makes the pool ``unavailable``
with the worker's message; the HTTP layer answers 503 with it.

Work: ``submit(job)`` queues an evaluation on the job's device (or the least busy one) and
hands its variants to the CPU compile pool (``precompile``) at once; the device's thread waits
for those compiles, then runs the evaluation through the device's ``Supervisor``. A job is any
object with the attributes and methods of ``PoolJob``.

Profiles (``profile``) are GPU work like evaluations: they go on the device's queue, so the
device's thread runs one only while its worker is idle, and no timing on that GPU runs while
Nsight Compute replays the profiled kernel (ncu also fixes the GPU's clocks while it
profiles). The profile itself runs ``PoolConfig.profile_fn`` (``gpu_runner.profile.
profile_variant``: ncu on a fixed launch script, in its own process) from the device's thread.
Sanitizer runs (``sanitize``: compute-sanitizer on one launch, ``PoolConfig.sanitize_fn``) go
the same way, for the same reason: the tools slow the GPU down for everyone on it.

Several GPUs: a job whose ``devices`` names more than one (or any job without ``devices`` when
``PoolConfig.split`` is set and more than one GPU serves) is split over them
(``split.SplitRun``): its parts go on each device's queue like any job. With
``PoolConfig.ray_address`` the devices are Ray actors holding one GPU each (``ray_lane``), every
evaluation is split over them, and a lost actor's part is evaluated again on another; profiles
and sanitizer runs go on the lane's queue as above and run inside its actor.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import queue
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol, Sequence

from gpu_runner.events import Note
from gpu_runner.ncu_csv import Profile
from gpu_runner.problem import Problem, Variant
from gpu_runner.report import CompileReport, Evaluation
from gpu_runner.workers.backend import WorkerConfig
from gpu_runner.workers.limits import Limits
from gpu_runner.workers.precompile import Precompiler
from gpu_runner.workers.protocol import EvaluateSpec
from gpu_runner.workers.split import Part, SplitRun, stamp
from gpu_runner.workers.supervisor import (Cancelled, Supervisor, SupervisorError, WorkerLost,
                                           WorkerStartError, WorkerUnavailable)

log = logging.getLogger("cudalens.runner")

PRECOMPILE_WAIT_S = 600.0  # longest wait for a job's CPU compiles before the worker starts anyway


class PoolJob(Protocol):
    """What the pool needs of a job (``gpu_runner.service.jobs.Job`` is one)."""

    spec: EvaluateSpec
    device: Optional[int]
    cancel: threading.Event

    def started(self, device: int) -> None: ...

    def progress(self, event) -> None:
        """One ``gpu_runner.events`` event of the job."""
        ...

    def finished(self, evaluation: Evaluation) -> None: ...

    def failed(self, message: str, kind: str = "error") -> None: ...

    def cancelled(self) -> None: ...


@dataclass(frozen=True)
class PoolConfig:
    """``devices``: CUDA device indices to use (None: all visible); ``factory``: the worker
    backend factory (None: the real runner); ``precompile_threads``: CPU compile threads
    (0: no precompiling; None: up to 8, one per core)."""

    devices: Optional[tuple[int, ...]] = None
    factory: Optional[Callable] = None
    limits: Limits = field(default_factory=Limits)
    precompile_threads: Optional[int] = None
    compile_fn: Optional[Callable] = None  # Precompiler's compile function (tests)
    # profile_fn(problem, variant, device_index=, timeout_s=) -> Profile, raising
    # gpu_runner.profile.ProfileError; None: gpu_runner.profile.profile_variant (tests set it)
    profile_fn: Optional[Callable] = None
    # sanitize_fn(problem, variant, device_index=, timeout_s=, tools=) -> SanitizeReport, raising
    # gpu_runner.sanitize.SanitizeError; None: gpu_runner.sanitize.sanitize_variant
    sanitize_fn: Optional[Callable] = None
    # Split every evaluation that names no ``devices`` over all served GPUs.
    split: bool = False
    # A Ray cluster's address ("auto", "ray://host:10001", ...): the GPUs are Ray actors with
    # one GPU each instead of this host's devices (``ray_lane``); "local" starts a local Ray
    # instance, and an already initialized Ray in this process is used as it is.
    ray_address: Optional[str] = None
    ray_gpus: Optional[int] = None  # how many actors (None: the cluster's GPU count)


class DeviceNotFound(LookupError):
    """A device index the pool has no worker for."""


class _CompileWork:
    def __init__(self, variants: Sequence[Variant]):
        self.variants = tuple(variants)
        self.future: concurrent.futures.Future = concurrent.futures.Future()


class _ProfileWork:
    """A tool run on one variant from the device's thread (a profile or a sanitizer run):
    ``fn(problem, variant, device_index=, timeout_s=)``; ``error``: the tool's exception class
    (``ProfileError``, ``SanitizeError``), raised with the reason when a Ray lane's actor is
    lost or cannot start."""

    def __init__(self, problem: Problem, variant: Variant, timeout_s: float, fn: Callable,
                 error: type = RuntimeError):
        self.problem, self.variant, self.timeout_s, self.fn = problem, variant, timeout_s, fn
        self.lost = error
        self.cancelled = threading.Event()  # the request stopped waiting: skip it
        self.future: concurrent.futures.Future = concurrent.futures.Future()


class Slot:
    """One device: its supervisor, its cubin cache directory, its queue and thread."""

    def __init__(self, index: int, supervisor: Supervisor, cache_dir: str):
        self.index = index
        self.supervisor = supervisor
        self.cache_dir = cache_dir
        self.queue: "queue.Queue" = queue.Queue()
        self.busy = 0  # queued or running items
        self._busy_lock = threading.Lock()
        self.thread = threading.Thread(target=self._loop, name=f"cudalens-gpu{index}",
                                       daemon=True)

    @property
    def arch(self) -> str:
        major, minor = self.supervisor.info.compute_capability
        return f"sm_{major}{minor}"

    def put(self, item) -> None:
        with self._busy_lock:
            self.busy += 1
        self.queue.put(item)

    def _loop(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            try:
                if isinstance(item, _CompileWork):
                    self._compile(item)
                elif isinstance(item, _ProfileWork):
                    self._profile(item)
                elif isinstance(item, Part):
                    if item.precompiled and not item.cancel.is_set():
                        concurrent.futures.wait(item.precompiled, timeout=PRECOMPILE_WAIT_S)
                    item.run(self.index, self.supervisor)
                else:
                    self._evaluate(item)
            finally:
                with self._busy_lock:
                    self.busy -= 1

    def _compile(self, work: _CompileWork) -> None:
        try:
            work.future.set_result(self.supervisor.compile(work.variants))
        except Exception as exc:  # noqa: BLE001 - handed to the waiting request
            work.future.set_exception(exc)

    def _profile(self, work: _ProfileWork) -> None:
        if work.cancelled.is_set():
            work.future.cancel()
            return
        remote = getattr(self.supervisor, "run_tool", None)  # a Ray lane: run in its actor
        try:
            if remote is not None:
                value = remote(work.fn, work.problem, work.variant, work.timeout_s)
            else:
                value = work.fn(work.problem, work.variant, device_index=self.index,
                                timeout_s=work.timeout_s)
            work.future.set_result(value)
        except (WorkerLost, WorkerStartError) as exc:  # the tool's error, kind "failed"
            work.future.set_exception(work.lost(str(exc)))
        except Exception as exc:  # noqa: BLE001 - handed to the waiting request
            work.future.set_exception(exc)

    def _evaluate(self, job) -> None:
        futures = getattr(job, "precompiled", ())
        if job.cancel.is_set():
            job.cancelled()
            return
        if futures:
            job.progress(Note(f"compiling {len(futures)} variant(s) on the CPU"))
            concurrent.futures.wait(futures, timeout=PRECOMPILE_WAIT_S)
        job.started(self.index)
        try:
            job.finished(stamp(self.supervisor.evaluate(job.spec, job.progress, job.cancel),
                               self.index))
        except Cancelled:
            job.cancelled()
        except SupervisorError as exc:
            job.failed(str(exc), exc.kind)
        except (WorkerUnavailable, WorkerStartError) as exc:
            job.failed(f"the GPU worker could not be (re)started: {exc}")
        except Exception as exc:  # noqa: BLE001 - the job reports it; the service lives on
            log.exception("evaluation failed")
            job.failed(f"internal error of the runner: {type(exc).__name__}: {exc}")


class GpuPool:
    """The runner's GPUs. ``status``: ``starting``, ``ready``, ``unavailable`` (no GPU) or
    ``failed``; ``message`` says why when not ready."""

    def __init__(self, config: Optional[PoolConfig] = None):
        config = config or PoolConfig()
        self.config = config
        self.status = "starting"
        self.message = ""
        self.slots: dict[int, Slot] = {}
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._cache_root = tempfile.mkdtemp(prefix="cudalens-runner-cubins-")
        threads = config.precompile_threads
        self.precompiler: Optional[Precompiler] = None
        if threads != 0 and config.ray_address is None:  # Ray nodes compile for themselves
            kw = {"compile_fn": config.compile_fn} if config.compile_fn else {}
            self.precompiler = Precompiler(threads, **kw)
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers in the background; ``wait_ready`` waits for the outcome."""
        threading.Thread(target=self._start_all, name="cudalens-pool-start", daemon=True).start()

    def wait_ready(self, timeout_s: float) -> str:
        """Wait until the pool is no longer starting (at most ``timeout_s``); the status."""
        self._ready.wait(timeout_s)
        return self.status

    def _make_slot(self, index: int) -> Slot:
        cache = tempfile.mkdtemp(prefix=f"gpu{index}-", dir=self._cache_root)
        if self.config.ray_address is not None:
            from gpu_runner.workers.ray_lane import RaySupervisor  # noqa: PLC0415 (optional)

            sup = RaySupervisor(index, self.config.factory, self.config.limits)
            sup.start()
            return Slot(index, sup, cache)
        sup = Supervisor(WorkerConfig(device_index=index, compile_cache_dir=cache,
                                      factory=self.config.factory), self.config.limits)
        sup.start()
        return Slot(index, sup, cache)

    def _start_all(self) -> None:
        devices = list(self.config.devices) if self.config.devices else None
        if self.config.ray_address is not None:
            try:
                from gpu_runner.workers.ray_lane import connect  # noqa: PLC0415 (optional)

                count = connect(self.config.ray_address, self.config.ray_gpus)
            except Exception as exc:  # noqa: BLE001 - reported through status
                self._settle("unavailable", str(exc))
                return
            devices = list(range(count))
        first = devices[0] if devices else 0
        try:
            slot = self._make_slot(first)
        except WorkerUnavailable as exc:
            self._settle("unavailable", str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - reported through status
            self._settle("failed", str(exc))
            return
        self._add(slot)
        rest = devices[1:] if devices else range(1, slot.supervisor.ready.device_count)
        for index in rest:
            try:
                self._add(self._make_slot(index))
            except Exception as exc:  # noqa: BLE001 - the other devices still serve
                log.error("device %d: %s", index, exc)
        self._settle("ready", "")

    def _add(self, slot: Slot) -> None:
        with self._lock:
            if self._closed:
                slot.supervisor.close()
                return
            self.slots[slot.index] = slot
        slot.thread.start()

    def _settle(self, status: str, message: str) -> None:
        self.status, self.message = status, message
        self._ready.set()

    def close(self) -> None:
        """Stop every worker and thread; cancel queued work; remove the cubin caches."""
        with self._lock:
            self._closed = True
            slots = list(self.slots.values())
        for slot in slots:
            slot.queue.put(None)
        for slot in slots:
            slot.thread.join(timeout=self.config.limits.stop_s)
            slot.supervisor.close()
        if self.precompiler is not None:
            self.precompiler.close()
        if self.config.ray_address is not None and "ray" in sys.modules:
            from gpu_runner.workers.ray_lane import disconnect  # noqa: PLC0415 (optional)

            disconnect()
        shutil.rmtree(self._cache_root, ignore_errors=True)

    # -- work ------------------------------------------------------------------------------

    def slot(self, device: Optional[int]) -> Slot:
        """The slot of ``device``, or the least busy one for None. Raises ``DeviceNotFound``."""
        with self._lock:
            if device is None:
                if not self.slots:
                    raise DeviceNotFound("this runner has no GPU worker")
                return min(self.slots.values(), key=lambda s: (s.busy, s.index))
            slot = self.slots.get(device)
        if slot is None:
            raise DeviceNotFound(f"device {device} is not served by this runner (devices: "
                                 f"{', '.join(map(str, sorted(self.slots))) or 'none'})")
        return slot

    def split_lanes(self, job) -> Optional[list[int]]:
        """The devices ``job`` is split over (its ``device`` first, if set), or None when it runs
        on one. Raises ``DeviceNotFound`` for a named device not served."""
        named = getattr(job, "devices", None)
        if named:
            for d in named:
                self.slot(d)
            lanes = list(dict.fromkeys(named))
        elif self.config.split or self.config.ray_address is not None:
            with self._lock:
                lanes = sorted(self.slots)
            if job.device is not None:
                self.slot(job.device)
                lanes = [job.device] + [i for i in lanes if i != job.device]
        else:
            return None
        return lanes if len(lanes) > 1 else None

    def submit(self, job) -> int:
        """Queue ``job`` (see ``PoolJob``); the device index it was queued on (the first of a
        split job's)."""
        lanes = self.split_lanes(job)
        if lanes is not None:
            return self._submit_split(job, lanes)
        slot = self.slot(job.device)
        job.device = slot.index
        spec = job.spec
        if self.precompiler is not None:
            job.precompiled = tuple(self.precompiler.submit([spec.baseline, *spec.candidates],
                                                            slot.arch, slot.cache_dir))
        slot.put(job)
        return slot.index

    def _submit_split(self, job, lanes: list[int]) -> int:
        job.device = lanes[0]
        spec = job.spec

        def dispatch(lane: int, part: Part) -> None:
            slot = self.slot(lane)
            if self.precompiler is not None:  # the part's compiles, into its GPU's cache
                part.precompiled = tuple(self.precompiler.submit(
                    [spec.baseline, *part.candidates], slot.arch, slot.cache_dir))
            slot.put(part)

        SplitRun(job, lanes, dispatch, load=lambda lane: self.slot(lane).busy).start()
        return lanes[0]

    def compile(self, variants: Sequence[Variant], device: Optional[int],
                timeout_s: float) -> list[CompileReport]:
        """Compile ``variants`` on ``device``'s worker (after the work queued before it).
        Raises ``DeviceNotFound``, ``TimeoutError``, or what the supervisor raised."""
        slot = self.slot(device)
        work = _CompileWork(variants)
        slot.put(work)
        try:
            return work.future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(f"compiling took longer than {timeout_s:g} s on device "
                               f"{slot.index} (it waits for the evaluations queued before it)") \
                from None

    def profile(self, problem: Problem, variant: Variant, device: Optional[int],
                timeout_s: float, wait_s: float) -> tuple[int, Profile]:
        """An Nsight Compute profile of one launch of ``variant`` on ``device`` (see the module
        doc): (device index, profile). ``timeout_s`` bounds the profile itself; ``wait_s`` the
        wait for the work queued before it plus the profile.

        Raises ``DeviceNotFound``; ``TimeoutError`` (the profile did not start and finish
        within ``wait_s``; it is dropped if it has not started); what ``profile_fn`` raised
        (``gpu_runner.profile.ProfileError``)."""
        if self.config.profile_fn is not None:
            fn = self.config.profile_fn
        else:
            from gpu_runner.profile import profile_variant as fn  # noqa: PLC0415
        from gpu_runner.profile import ProfileError  # noqa: PLC0415
        slot = self.slot(device)
        work = _ProfileWork(problem, variant, timeout_s, fn, ProfileError)
        slot.put(work)
        try:
            return slot.index, work.future.result(timeout=wait_s)
        except concurrent.futures.TimeoutError:
            work.cancelled.set()
            raise TimeoutError(f"profiling took longer than {wait_s:g} s on device "
                               f"{slot.index} (it waits for the work queued before it)") from None

    def sanitize(self, problem: Problem, variant: Variant, device: Optional[int],
                 timeout_s: float, wait_s: float, tools: Sequence[str]):
        """compute-sanitizer's ``tools`` on one launch of ``variant`` on ``device`` (module
        doc): (device index, ``gpu_runner.sanitize.SanitizeReport``). ``timeout_s`` bounds each
        tool's run; ``wait_s`` the wait for the work queued before it plus the runs.

        Raises ``DeviceNotFound``; ``TimeoutError`` (as ``profile``); what ``sanitize_fn``
        raised (``gpu_runner.sanitize.SanitizeError``)."""
        if self.config.sanitize_fn is not None:
            fn = self.config.sanitize_fn
        else:
            from gpu_runner.sanitize import sanitize_variant as fn  # noqa: PLC0415
        from gpu_runner.sanitize import SanitizeError  # noqa: PLC0415
        slot = self.slot(device)
        work = _ProfileWork(problem, variant, timeout_s,
                            functools.partial(fn, tools=tuple(tools)), SanitizeError)
        slot.put(work)
        try:
            return slot.index, work.future.result(timeout=wait_s)
        except concurrent.futures.TimeoutError:
            work.cancelled.set()
            raise TimeoutError(f"the sanitizer run took longer than {wait_s:g} s on device "
                               f"{slot.index} (it waits for the work queued before it)") from None
