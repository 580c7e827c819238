"""The correctness contract (ARCHITECTURE.md, "Correctness"), run on the GPU.

For each seed and each case: fresh random inputs (``inputs.make_inputs``); the baseline runs
twice with poisoned outputs (its outputs are the reference; a baseline that writes outside its
buffers, changes an ``in`` buffer, or gives different results twice without ``atomics`` makes
the whole evaluation fail with ``BaselineError``, since nothing can be checked against it);
then each candidate still passing runs on the same inputs with poisoned outputs and is judged
(``verdicts.judge_run``), and runs a second time, poisoned again, and must repeat itself
(``verdicts.judge_repeat``). Before every launch all ``in`` and ``inout`` buffers are restored
from their pristine device copies and every guard region is refilled, so one candidate's
damage never reaches the next.

Faults: a launch the driver rejects or a kernel that faults gives the candidate
``launch_error``. A kernel fault leaves CUDA unusable in the process (see ``session``); then, as
after a kernel that does not finish within ``timeout_s`` (``timeout``), every candidate not yet
judged gets ``launch_error`` saying it was not verified, and verification stops.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from gpu_runner.buffers import DeviceBuffers
from gpu_runner.compare import changed
from gpu_runner.compiler import CompiledVariant
from gpu_runner.inputs import make_inputs
from gpu_runner.launch import launch_kernel
from gpu_runner.problem import Buffer, Case, Problem
from gpu_runner.report import Verdict
from gpu_runner.session import GpuSession, KernelTimeout, LaunchFailure
from gpu_runner.verdicts import (RunResult, fmt, judge_repeat, judge_run, launch_verdict,
                                 timeout_verdict)

Progress = Optional[Callable[[str], None]]


class BaselineError(RuntimeError):
    """The baseline cannot serve as the reference (see the module doc)."""


def run_once(session: GpuSession, compiled: CompiledVariant, case_index: int,
             buffers: DeviceBuffers, timeout_s: float) -> RunResult:
    """Restore inputs, refill guards, poison outputs, launch, wait, read everything back.

    Raises ``LaunchFailure`` (launch rejected, kernel fault, failed read-back) or
    ``KernelTimeout``.
    """
    drv = session.drv
    stream = session.stream
    try:
        fn = compiled.function
        buffers.restore(stream)
        buffers.reset_guards(stream)
        buffers.poison(stream)
        launch_kernel(drv, fn, buffers, compiled.variant.launches[case_index], stream)
        done = drv.Event()
        done.record(stream)
    except drv.Error as e:
        raise LaunchFailure(str(e)) from e
    session.wait(done, timeout_s)
    try:
        case = buffers.case
        return RunResult(
            outputs=buffers.read_outputs(),
            inputs_after={a.name: buffers.read(a.name) for a in case.args
                          if isinstance(a, Buffer) and a.role == "in"},
            guard=buffers.guard_damage())
    except drv.Error as e:
        raise LaunchFailure(f"reading the results back failed: {e}") from e


class _CaseBuffers:
    """The device buffers of one (seed, case), made on first use."""

    def __init__(self, session: GpuSession, case: Case, inputs):
        self.session, self.case, self.inputs = session, case, inputs
        self._bufs: Optional[DeviceBuffers] = None

    def get(self) -> DeviceBuffers:
        if self._bufs is None:
            self._bufs = DeviceBuffers(self.session.drv, self.case, self.inputs)
        return self._bufs

    def drop(self) -> None:
        if self._bufs is not None:
            self._bufs.free()
            self._bufs = None


def _baseline_reference(session: GpuSession, problem: Problem, baseline: CompiledVariant,
                        ci: int, case: Case, seed: int, inputs, bufs: _CaseBuffers,
                        timeout_s: float) -> RunResult:
    where = f"case '{case.label}', seed {seed}"
    runs = []
    for attempt in range(2):
        try:
            runs.append(run_once(session, baseline, ci, bufs.get(), timeout_s))
        except LaunchFailure as e:
            session.after_failure(str(e))
            raise BaselineError(f"the baseline failed to run ({where}): {e}") from e
        except KernelTimeout as e:
            raise BaselineError(f"the baseline did not finish ({where}): {e}") from e
    first, second = runs
    for run in runs:
        if run.guard is not None:
            g = run.guard
            raise BaselineError(
                f"the baseline wrote outside buffer '{g.buffer}' ({where}, nearest element index "
                f"{g.index}); check the spec's lengths and launch configuration")
        for name, after in run.inputs_after.items():
            d = changed(inputs[name], after)
            if d:
                raise BaselineError(
                    f"the baseline modified input '{name}' ({where}, index {d.index}: was "
                    f"{fmt(d.expected)}, now {fmt(d.actual)}); declare it 'inout' in the spec")
    if not problem.atomics:
        for name, values in first.outputs.items():
            d = changed(values, second.outputs[name])
            if d:
                raise BaselineError(
                    f"the baseline gave different values for '{name}' in two runs on the same "
                    f"inputs ({where}, index {d.index}: {fmt(d.expected)}, then "
                    f"{fmt(d.actual)}); if it uses atomics, mark the spec 'atomics'")
    return first


def verify(session: GpuSession, problem: Problem, baseline: CompiledVariant,
           candidates: Sequence[CompiledVariant], *, timeout_s: float = 10.0,
           progress: Progress = None) -> dict[str, Verdict]:
    """Verdicts (failing ones; a candidate absent from the result passed) keyed by variant
    label. Needs the session's context current. Raises ``BaselineError``."""
    failed: dict[str, Verdict] = {}
    say = progress or (lambda _m: None)
    for seed in problem.seeds:
        for ci, case in enumerate(problem.cases):
            live = [c for c in candidates if c.variant.label not in failed]
            inputs = make_inputs(case, seed)
            bufs = _CaseBuffers(session, case, inputs)
            try:
                say(f"verify: baseline on case '{case.label}', seed {seed}")
                reference = _baseline_reference(session, problem, baseline, ci, case, seed,
                                                inputs, bufs, timeout_s)
                for cand in live:
                    label = cand.variant.label
                    say(f"verify: {label} on case '{case.label}', seed {seed}")
                    verdict = _judge(session, problem, cand, ci, case, seed, inputs, bufs,
                                     reference, timeout_s)
                    if verdict is not None:
                        failed[label] = verdict
                    if session.wedged:
                        _skip_rest(candidates, failed, session.wedged)
                        return failed
            finally:
                if session.wedged:
                    session.retain(bufs)
                else:
                    bufs.drop()
    return failed


def _judge(session, problem, cand, ci, case, seed, inputs, bufs, reference, timeout_s):
    label = cand.variant.label
    runs = []
    for attempt in range(2):
        when = " (second run)" if attempt else ""
        try:
            runs.append(run_once(session, cand, ci, bufs.get(), timeout_s))
        except LaunchFailure as e:
            session.after_failure(str(e))
            return launch_verdict(label, case, seed, str(e), when)
        except KernelTimeout as e:
            return timeout_verdict(label, case, seed, str(e), when)
        if attempt == 0:
            verdict = judge_run(label, case, seed, inputs, runs[0], reference.outputs,
                                problem.tolerance)
        else:
            verdict = judge_repeat(label, case, seed, inputs, runs[0], runs[1],
                                   reference.outputs, problem.tolerance, problem.atomics)
        if verdict is not None:
            return verdict
    return None


def _skip_rest(candidates, failed, why: str) -> None:
    for c in candidates:
        if c.variant.label not in failed:
            failed[c.variant.label] = Verdict(
                variant=c.variant.label, status="launch_error",
                reason=f"not verified: {why}")
