"""Background optimization: a queue of kernels, work-done progress, cancel.

Optimizing a kernel takes seconds to minutes (compiles, verification, an interleaved timing
loop on the GPU), so it never runs on the server's event loop. ``Jobs.submit`` snapshots
the document and queues the kernel; one worker coroutine takes jobs in order and runs each
in a single background thread (the runner measures one kernel at a time: two at once would
disturb each other's timings). Each job has its own progress token, begun when queued
("waiting: 1 kernel ahead"), reported while it runs ("candidate 5/12: verifying against the
baseline, best so far 1.80x", "timing round 20/50") and ended with its outcome.

Cancel (``window/workDoneProgress/cancel`` on the job's token, or the ``cudalens.cancel``
command): a queued job is dropped; a running job is told to stop at the runner's next
progress message, its progress ends at once, and whatever it finishes with is thrown away.

Before any runner is asked (``runner_factory``), a job runs the engine's preflight
(``cudalens.engine.preflight``): the build can be read and the file compiles (the diagnostics'
check of the same version when one finished, else a compile here; none with
``cudalens.check.enabled`` off). A kernel whose document's current check failed is refused at
``submit``. A failed job is kept in ``failures`` (message and time) until the kernel's next job.

Progress comes as typed events (``cudalens.engine.events``: the runner's ``Compiling``,
``Verifying``, ``TimingRound`` ..., the optimize flow's ``BatchStarted``, ``BestSoFar``,
``Confirming``); ``cudalens.lsp.progress.BuiltinProgress`` turns them into what the editor
shows. The runner reports candidates' speedups when a batch's interleaved timing loop ends;
from then on the fastest verified one so far (``BestSoFar``) follows the candidate and timing
messages, and the final message gives the winner's speedup.

The proposer (``Settings.proposer``, see ``cudalens.lsp.llm.choose``): the job runs
``cudalens.engine.run.run`` with the built-in passes or the LLM agent and the job's cancel
event, so a cancel stops a request to the model in flight at once and a runner batch at its
next event; ``auto`` runs the LLM when one is configured and answers,
else the built-in passes. The job's first progress message says which ran and why, its last
one names it again; a fallback from ``auto`` is also shown as a warning. The LLM's progress
is per round (``round 2/4, best 1.80x: timing round 7/50``; ``llm.AgentProgress``). Its
winner is stored and offered like a built-in candidate (code lens, apply, reject).

Profile: when ``Settings.profile`` is on and the runner can profile (``Runner.can_profile``,
as ``RunnerClient`` can; the model and replay runners cannot), the job's last step
asks the runner for an Nsight Compute profile of the winner, else of the baseline, and stores
it with the run (``RunRecord.profile``; the hover shows it). A runner that answers "not
available" (no ncu, counters not permitted, no GPU) leaves the reason in the record and
nothing on screen; a failing request is logged and the run kept without a profile.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import itertools
import logging
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from lsprotocol import types

from gpu_runner.report import DeviceInfo
from cudalens.errors import CudalensError
from cudalens.lsp.config import Settings
from cudalens.lsp.documents import DocumentSnapshot, KernelView
from cudalens.lsp import llm
from cudalens.lsp.notifier import Notifier
from cudalens.lsp.progress import BuiltinProgress
from cudalens.engine.preflight import does_not_compile, preflight, refuses
from cudalens.engine.proposer import Budget, RunCancelled
from cudalens.engine.run import run
from cudalens.engine.runner import Runner
from cudalens.sanitize_check import OriginalUnsafe, check_original_status
from cudalens.sanitizer_status import not_run
from cudalens.store.from_optimize import profile_subject, run_record
from cudalens.store.keys import device_id, result_key
from cudalens.store.records import RunProfile, RunRecord

log = logging.getLogger(__name__)

RunnerFactory = Callable[[Settings], Runner]

# Raised where a cancelled optimization stops (``cudalens.engine.proposer.RunCancelled``).
JobCancelled = RunCancelled


@dataclass
class Job:
    """One kernel to optimize. ``state``: queued, running, done, cancelled, failed."""

    id: int
    snapshot: DocumentSnapshot
    view: KernelView
    settings: Settings
    token: str
    cancel: threading.Event = field(default_factory=threading.Event)
    state: str = "queued"
    message: str = ""
    proposer: str = ""  # the proposer that ran: llm.Choice.label, once chosen

    @property
    def uri(self) -> str:
        return self.snapshot.uri

    @property
    def kernel(self) -> str:
        return self.view.name


@dataclass(frozen=True)
class Failure:
    """A kernel's last failed optimize job: its ``message`` and when (``at``, UTC ISO)."""

    message: str
    at: str


def outcome(record: RunRecord) -> str:
    """The final progress message: ``best 1.28x (verified), 24 candidates``."""
    offers = record.offers()
    n = len(record.candidates)
    verified = sum(1 for c in record.candidates if c.verified)
    if offers:
        return (f"best {offers[0].result.speedup.value:.2f}x (verified), {verified}/{n} "
                f"candidates verified")
    if n and not verified:
        return f"none of the {n} candidates passed verification"
    return f"no candidate faster beyond noise; {verified}/{n} candidates verified"


class Jobs:
    """The optimization queue of one session. It tells the editor what happens through
    ``notifier`` and reads nothing of the session but what it is given: ``settings()`` (the
    current settings; a job keeps those it was queued with), ``snapshot(uri)`` (the current
    analysis of an open document, None when closed), ``stored(record, job)`` (a finished
    run to keep) and ``device_seen(settings, device)`` (the runner's device, once known).
    ``on_findings(snapshot, kernel, findings)``, when set, gets the compute-sanitizer findings
    that stopped a job (``lsp/server.py`` sets the sanitizer checks' ``record``).
    ``checked(uri, version)``: the editor's compile check of that document version, when one
    finished (the engine's preflight uses it instead of compiling again; a failed one refuses
    the job at once). ``failures``: each kernel's last failed job, ``(uri, kernel) ->
    Failure``, kept until the kernel's next job is queued (the hover shows it)."""

    def __init__(self, notifier: Notifier, runner_factory: RunnerFactory, *,
                 settings: Callable[[], Settings],
                 snapshot: Callable[[str], Optional[DocumentSnapshot]],
                 stored: Callable[[RunRecord, Job], None],
                 device_seen: Callable[[Settings, DeviceInfo], None],
                 checked: Callable[[str, Optional[int]], Optional[Any]] = lambda _u, _v: None):
        self.notifier = notifier
        self._checked = checked
        self.failures: dict[tuple[str, str], Failure] = {}
        self.runner_factory = runner_factory
        self._settings = settings
        self._snapshot = snapshot
        self._stored = stored
        self._device_seen = device_seen
        self.on_findings: Optional[Callable[[DocumentSnapshot, str, tuple], None]] = None
        self.queue: deque[Job] = deque()
        self.running: Optional[Job] = None
        self._ids = itertools.count(1)
        self._worker: Optional[asyncio.Task] = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cudalens-optimize")
        self._clients: dict[tuple[str, str], Runner] = {}
        self._client_lock = threading.Lock()
        # clients dropped by a settings change while a job used them: closed when it ends
        self._retired: list[Runner] = []
        self._closed = False

    # -- queries ---------------------------------------------------------------------------

    def active(self, uri: str, kernel: str) -> Optional[Job]:
        """The queued or running job of ``kernel`` in ``uri``, if any."""
        for job in ([self.running] if self.running else []) + list(self.queue):
            if job.uri == uri and job.kernel == kernel and job.state in ("queued", "running"):
                return job
        return None

    def find(self, token: str) -> Optional[Job]:
        for job in ([self.running] if self.running else []) + list(self.queue):
            if job.token == token:
                return job
        return None

    # -- submit and cancel -----------------------------------------------------------------

    async def submit(self, snapshot: DocumentSnapshot, view: KernelView) -> Job:
        """Queues ``view``'s kernel of ``snapshot``; returns the job (an already queued or
        running job of the same kernel and source is returned instead of a second one).

        Raises:
            CudalensError: the kernel has no usable spec.
        """
        if view.spec is None:
            raise CudalensError(f"cannot optimize {view.name}: {view.spec_error}")
        check = self._checked(snapshot.uri, snapshot.version)
        if refuses(check):  # the engine's preflight would refuse it
            raise CudalensError(f"cannot optimize {view.name}: "
                                f"{does_not_compile(str(snapshot.path), check)}")
        existing = self.active(snapshot.uri, view.name)
        if existing is not None and existing.view.material == view.material:
            return existing
        self.failures.pop((snapshot.uri, view.name), None)  # until the next run
        job = Job(id=next(self._ids), snapshot=snapshot, view=view,
                  settings=self._settings(), token="")
        job.token = f"cudalens/optimize/{job.id}"
        ahead = len(self.queue) + (1 if self.running else 0)
        job.message = f"waiting: {ahead} kernel{'s' if ahead != 1 else ''} ahead" if ahead \
            else "starting"
        self.queue.append(job)
        await self.notifier.progress_begin(job.token, self._title(job), job.message)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._work())
        self.notifier.refresh()
        return job

    def cancel(self, job: Job) -> None:
        """Stops ``job``: drops it when queued; tells it to stop when running."""
        if job.state not in ("queued", "running"):
            return
        job.cancel.set()
        if job in self.queue:
            self.queue.remove(job)
        job.state = "cancelled"
        job.message = "cancelled"
        self.notifier.progress_end(job.token, f"{job.kernel}: cancelled; no results kept")
        self.notifier.refresh()

    def _title(self, job: Job) -> str:
        return f"Optimize {job.kernel} ({llm.action_label(job.settings, job.snapshot.path)})"

    # -- the worker ------------------------------------------------------------------------

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        while self.queue:
            job = self.queue.popleft()
            if job.state != "queued":
                continue
            self.running = job
            job.state = "running"
            self.notifier.progress_report(job.token, "starting", 0)
            self.notifier.refresh()
            try:
                record = await loop.run_in_executor(self._executor, self._run, job, loop)
            except JobCancelled:
                pass
            except Exception as exc:  # noqa: BLE001 - any failure ends this job, not the server
                self._failed(job, exc)
            else:
                try:
                    self._finished(job, record)
                except Exception as exc:  # noqa: BLE001 - storing or wording the results failed
                    self._failed(job, exc)
            finally:
                self.running = None
                self._close_retired()
                if self._closed:
                    return
                self.notifier.refresh()
                if job.state == "cancelled":
                    log.info("optimizing %s was cancelled", job.kernel)

    def _client(self, settings: Settings) -> Runner:
        ident = settings.runner_identity()
        with self._client_lock:
            if ident not in self._clients:
                self._clients[ident] = self.runner_factory(settings)
            return self._clients[ident]

    def forget_clients(self) -> None:
        """Drops cached runner connections (the runner settings changed): the next job makes
        a new one. A connection the running job uses is closed when that job ends, so the
        job finishes against the runner it started with."""
        with self._client_lock:
            clients, self._clients = list(self._clients.values()), {}
            if self.running is not None and not self._closed:
                self._retired.extend(clients)
                return
        self._close(clients)

    def failures_of(self, uri: str) -> dict[str, Failure]:
        """The last failed job of each kernel of document ``uri`` (kernel name -> Failure)."""
        return {kernel: f for (u, kernel), f in self.failures.items() if u == uri}

    def _failed(self, job: Job, exc: Exception) -> None:
        """Ends ``job`` as failed: the error shown first, then its progress ended."""
        if self._closed:
            log.info("optimizing %s ended with the server: %s", job.kernel, exc)
            return
        if job.state not in ("running", "done"):
            return
        job.state = "failed"
        job.message = _failure(exc)
        self.failures[(job.uri, job.kernel)] = Failure(
            job.message, dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
        log.warning("optimizing %s failed: %s", job.kernel, job.message,
                    exc_info=not isinstance(exc, CudalensError))
        # The message goes out first so that a client that sees the progress end has already
        # been told why.
        self.notifier.show_message(f"cudalens: optimizing {job.kernel} failed: {job.message}",
                                   types.MessageType.Error)
        self.notifier.progress_end(job.token, f"{job.kernel}: failed")

    def _finished(self, job: Job, record: Any) -> None:
        """Stores a finished job's run and ends its progress with the outcome."""
        if self._closed or job.state != "running":  # shut down, or cancelled meanwhile
            return
        job.state = "done"
        record, agent = record if isinstance(record, tuple) else (record, None)
        self._stored(record, job)
        job.message = outcome(record) if agent is None else llm.agent_outcome(record, agent)
        if agent is None and job.proposer:
            job.message += f" ({job.proposer})"
        if self._changed_during_run(job):
            job.message += ("; the kernel changed during the run, so these results are stale: "
                            "run Optimize again to apply a candidate")
        self.notifier.progress_end(job.token, f"{job.kernel}: {job.message}")

    def _changed_during_run(self, job: Job) -> bool:
        """Whether the kernel, its spec or its includes' context changed while the job ran
        (its material key now differs from the one the run was made for)."""
        current = self._snapshot(job.uri)
        if current is None:
            return False
        view = next((v for v in current.kernels if v.name == job.kernel), None)
        return view is not None and view.material != job.view.material

    def _close_retired(self) -> None:
        with self._client_lock:
            retired, self._retired = self._retired, []
        self._close(retired)

    @staticmethod
    def _close(clients: list[Runner]) -> None:
        for client in clients:
            try:
                client.close()
            except Exception as exc:  # noqa: BLE001 - closing must not fail the server
                log.warning("closing a runner client failed: %s", exc)

    def _run(self, job: Job, loop: asyncio.AbstractEventLoop) -> Any:
        """Runs in the worker thread: the whole optimize flow (or agent session) for one job;
        returns its ``RunRecord``, or ``(RunRecord, AgentResult)`` for the LLM."""
        def report(text: str, percent: Optional[int] = None) -> None:
            job.message = text
            loop.call_soon_threadsafe(self.notifier.progress_report, job.token, text, percent)

        # the engine's cheap checks first (the build, the compile): nothing is asked of a
        # runner for a kernel that cannot be run
        target = job.snapshot.target(job.view)
        settings = job.settings
        check = self._checked(job.uri, job.snapshot.version)
        if check is None and settings.check_enabled:
            report("compiling with nvcc", 0)
        # with the compile check off (cudalens.check.enabled) nothing is compiled here
        preflight(target, nvcc=settings.nvcc, arch=settings.arch,
                  options=settings.nvcc_options, compiled=check,
                  compile=settings.check_enabled)
        if job.cancel.is_set():
            raise JobCancelled()
        # the runner next: no request goes to the model's server where nothing can be run
        client = self._client(job.settings)
        if job.cancel.is_set():
            raise JobCancelled()
        device = client.device_info()
        loop.call_soon_threadsafe(self._device_seen, job.settings, device)
        choice = llm.choose(job.settings, job.snapshot.path)
        job.proposer = choice.label
        if choice.config is not None:
            log.info("LLM configuration for %s: %s", job.kernel, llm.origins(choice.config))
        for warning in choice.warnings:
            log.warning("%s", warning)
            loop.call_soon_threadsafe(self.notifier.show_message, f"cudalens: {warning}",
                                      types.MessageType.Warning)
        report(f"proposer: {choice.reason}", 0)
        if choice.fallback:
            loop.call_soon_threadsafe(self.notifier.show_message,
                                      f"cudalens: optimizing {job.kernel} with {choice.reason}",
                                      types.MessageType.Warning)
        sanitizer = not_run("the cudalens.sanitize setting is off")
        from cudalens.lsp.capture_action import replay_for  # a current capture is replayed
        target, replay = replay_for(job.settings.workspace_roots, job.snapshot, job.view, target,
                                    choice.kind, report)
        if job.settings.sanitize:  # an original with a race is no reference (sanitize_check)
            try:
                sanitizer = check_original_status(target, client,
                                                  lambda message: report(message, None))[0]
            except OriginalUnsafe as exc:  # its findings go on their lines too
                if self.on_findings is not None:
                    loop.call_soon_threadsafe(self.on_findings, job.snapshot, job.view.name,
                                              exc.findings)
                raise
            if job.cancel.is_set():
                raise JobCancelled()
        shown = llm.AgentProgress(choice.config.rounds) if choice.kind == "llm" \
            else BuiltinProgress()

        def on_event(event) -> None:
            said = shown.describe(event)
            if said is not None:
                report(*said)

        budget = Budget(candidates=job.settings.budget, repetitions=job.settings.repetitions,
                        seed=job.settings.seed)
        proposal = run(target, client, choice.proposer(replay=replay), budget, on_event,
                       job.cancel)
        agent = proposal.agent
        if agent is not None:
            log.info("LLM session for %s: %s; %d request(s), %d tokens", job.kernel,
                     agent.stop_reason, agent.requests, agent.usage.total_tokens)
            if proposal.failed:
                # not the run that was asked for: nothing is kept, so the kernel does not look
                # measured (as with the CLI, which applies nothing and exits 2)
                raise CudalensError(f"the LLM session stopped early: {agent.stop_reason}")
        result = proposal.result
        if job.cancel.is_set():
            raise JobCancelled()
        provenance = client.provenance or _provenance(client, device)
        key = result_key(job.view.material, device_id(result.evaluation.device))
        created = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        record = run_record(dataclasses.replace(result, sanitizer=sanitizer), key=key,
                            provenance=provenance, created=created,
                            budget=job.settings.budget, seed=job.settings.seed)
        if job.settings.profile:
            profile = take_profile(job, client, result, report)
            if profile is not None:
                record = dataclasses.replace(record, profile=profile)
        if job.cancel.is_set():
            raise JobCancelled()
        return record if agent is None else (record, agent)

    def shutdown(self) -> None:
        """Cancels every job and ends its progress (the client sees no half-finished work);
        a job's thread that is still running has its results dropped when it returns."""
        self._closed = True
        for job in list(self.queue) + ([self.running] if self.running else []):
            job.cancel.set()
            if job.state in ("queued", "running"):
                job.state = "cancelled"
                self.notifier.progress_end(job.token, f"{job.kernel}: cancelled, the server is "
                                                     f"shutting down")
        self.queue.clear()
        self._executor.shutdown(wait=False, cancel_futures=True)
        self.forget_clients()
        self._close_retired()


def take_profile(job: Job, client: Runner, result,
                 report: Callable[[str, Optional[int]], None]) -> Optional[RunProfile]:
    """The profile of ``result``'s winner (else baseline) from the runner, or why there
    is none; None when the client cannot profile or the request failed (module doc)."""
    if not client.can_profile or job.cancel.is_set():
        return None
    subject = profile_subject(result)
    if subject is None:
        return None
    ident, label, variant = subject
    report(f"profiling {label} with Nsight Compute", None)
    try:
        answer = client.try_profile(result.problem, variant)
    except Exception as exc:  # noqa: BLE001 - a profile is extra; the run's results stand
        log.warning("profiling %s of %s failed: %s", label, job.kernel, exc)
        return None
    created = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    if answer.profile is None:
        log.info("no profile of %s of %s: %s", label, job.kernel, answer.reason)
    return RunProfile(subject=ident, label=label, created=created, profile=answer.profile,
                      reason=answer.reason)


def _provenance(client: Runner, device) -> str:
    where = client.where or "the GPU runner"
    return f"measured by {where} on {device.name}"


def _failure(exc: Exception) -> str:
    """The message for a failed job: the error's own words for errors meant for users."""
    text = str(exc).strip() or type(exc).__name__
    if type(exc).__name__ == "RunnerUnavailable":  # expected where there is no GPU: no traceback
        return f"no GPU runner can be used: {text}"
    return text if isinstance(exc, CudalensError) else f"{type(exc).__name__}: {text}"
