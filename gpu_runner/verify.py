"""The correctness contract (docs/architecture.md, "Correctness"), run on the GPU.

For each seed and each case: fresh random inputs (``inputs.make_inputs``); the baseline runs
twice with poisoned outputs (its outputs are the reference; a baseline that writes outside its
buffers, changes an ``in`` buffer, or gives different results twice without ``atomics`` makes
the whole evaluation fail with ``BaselineError``, since nothing can be checked against it);
then each candidate still passing runs on the same inputs with poisoned outputs and is judged
(``verdicts.judge_run``), and runs a second time, poisoned again, and must repeat itself
(``verdicts.judge_repeat``). Before every launch all ``in`` and ``inout`` buffers are restored
from their pristine device copies and every guard region is refilled, so one candidate's
damage never reaches the next.

A captured case (``Case.captured``, ``gpu_runner.captured``) runs for the first seed only, on
its captured inputs and without the screen: the baseline's re-run must reproduce the captured
results (else ``BaselineError``: the capture depends on state outside the parameters or
races), and a candidate's first run must match both the baseline's re-run and the captured
results.

With a ``screen`` (``gpu_runner.screen.DeviceScreen``, what ``Runner`` passes) every check
first runs on the device against device copies of the baseline's outputs and of a candidate's
first run; only a launch the screen flags is read back and judged on the host by the same
functions as without it, so the verdicts and their messages do not depend on the screen. The
baseline's outputs are read back only when a candidate's verdict needs them.

Faults: a launch the driver rejects or a kernel that faults gives the candidate
``launch_error``. A kernel fault leaves CUDA unusable in the process (see ``session``); then, as
after a kernel that does not finish within ``timeout_s`` (``timeout``), every candidate not yet
judged gets ``launch_error`` saying it was not verified, and verification stops.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from gpu_runner.buffers import DeviceBuffers, OutputSnapshot
from gpu_runner import elements
from gpu_runner.compare import (DEFAULT_RTOL, Bounds, changed, is_constant, mismatch,
                                output_scale, resolve_bounds, values_of)
from gpu_runner.compiler import CompiledVariant
from gpu_runner.events import OnEvent, Verifying, emit_to
from gpu_runner.captured import CapturedDataError, captured_results
from gpu_runner.inputs import make_inputs
from gpu_runner.launch import launch_kernel
from gpu_runner.patterns import is_float
from gpu_runner.problem import Buffer, Case, Problem
from gpu_runner.report import Verdict
from gpu_runner.session import GpuSession, KernelTimeout, LaunchFailure
from gpu_runner.verdicts import (RunResult, fmt, judge_repeat, judge_run, launch_verdict,
                                 timeout_verdict)



class BaselineError(RuntimeError):
    """The baseline cannot serve as the reference (see the module doc)."""


def launch_once(session: GpuSession, compiled: CompiledVariant, case_index: int,
                buffers: DeviceBuffers, timeout_s: float) -> None:
    """Restore inputs, refill guards, poison outputs, launch and wait.

    Raises ``LaunchFailure`` (launch rejected, kernel fault) or ``KernelTimeout``.
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


def read_back(session: GpuSession, buffers: DeviceBuffers) -> RunResult:
    """Host copies of the last launch's outputs, inputs and guard damage. Raises
    ``LaunchFailure`` when reading fails."""
    try:
        case = buffers.case
        return RunResult(
            outputs=buffers.read_outputs(),
            inputs_after={a.name: buffers.read(a.name) for a in case.args
                          if isinstance(a, Buffer) and a.role == "in"},
            guard=buffers.guard_damage())
    except session.drv.Error as e:
        raise LaunchFailure(f"reading the results back failed: {e}") from e


def run_once(session: GpuSession, compiled: CompiledVariant, case_index: int,
             buffers: DeviceBuffers, timeout_s: float) -> RunResult:
    """Restore inputs, refill guards, poison outputs, launch, wait, read everything back.

    Raises ``LaunchFailure`` (launch rejected, kernel fault, failed read-back) or
    ``KernelTimeout``.
    """
    launch_once(session, compiled, case_index, buffers, timeout_s)
    return read_back(session, buffers)


class _CaseBuffers:
    """The device buffers of one (seed, case), made on first use, and the device snapshots
    of the baseline's outputs (``ref``) and of a candidate's first run (``first``)."""

    def __init__(self, session: GpuSession, case: Case, inputs):
        self.session, self.case, self.inputs = session, case, inputs
        self._bufs: Optional[DeviceBuffers] = None
        self.ref: Optional[OutputSnapshot] = None
        self.first: Optional[OutputSnapshot] = None

    def get(self) -> DeviceBuffers:
        if self._bufs is None:
            self._bufs = DeviceBuffers(self.session.drv, self.case, self.inputs)
        return self._bufs

    def drop(self) -> None:
        for snap in (self.ref, self.first):
            if snap is not None:
                snap.free()
        self.ref = self.first = None
        if self._bufs is not None:
            self._bufs.free()
            self._bufs = None


class _LazyOutputs(Mapping):
    """Host copies of a snapshot's buffers, read on first access."""

    def __init__(self, snap: OutputSnapshot):
        self.snap, self._host = snap, {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._host:
            self._host[name] = self.snap.read(name)
        return self._host[name]

    def __iter__(self):
        return iter(self.snap.specs)

    def __len__(self) -> int:
        return len(self.snap.specs)


@dataclass
class _Reference:
    """The baseline's outputs for one (seed, case): ``outputs`` on the host (lazily when
    ``snap`` holds them on the device), and the bounds of each output, computed once."""

    outputs: Mapping[str, np.ndarray]
    snap: Optional[OutputSnapshot] = None
    _bounds: dict = field(default_factory=dict)
    _default_bounds: dict = field(default_factory=dict)
    _varies: dict = field(default_factory=dict)

    def default_bounds(self, spec: Buffer, screen) -> Bounds:
        """The element type's default bounds for output ``spec`` (``compare.resolve_bounds``
        without a spec tolerance), computed once."""
        if spec.name not in self._default_bounds:
            self._default_bounds[spec.name] = self.bounds(spec, None, screen, cache=False)
        return self._default_bounds[spec.name]

    def varies(self, spec: Buffer, screen) -> bool:
        """Whether the baseline's float output ``spec`` is not constant (on the device when
        ``snap`` holds it and the screen has a kernel for its type), computed once."""
        if spec.name not in self._varies:
            if self.snap is not None and not elements.is_narrow(spec.dtype):
                self._varies[spec.name] = screen.unlike_first(
                    self.snap.ptr(spec.name), spec.dtype, spec.length) > 0
            else:
                self._varies[spec.name] = not is_constant(
                    values_of(self.outputs[spec.name], spec.dtype))
        return self._varies[spec.name]

    def bounds(self, spec: Buffer, tolerance, screen, cache: bool = True) -> Bounds:
        if spec.name not in self._bounds or not cache:
            if self.snap is not None and not elements.is_narrow(spec.dtype):
                scale = lambda: screen.abs_max(self.snap.ptr(spec.name), spec.dtype, spec.length)
            else:  # narrow floats: the screen has no kernel for them; decode on the host
                scale = lambda: output_scale(values_of(self.outputs[spec.name], spec.dtype))
            found = resolve_bounds(spec.dtype, tolerance, scale)
            if not cache:
                return found
            self._bounds[spec.name] = found
        return self._bounds[spec.name]


def _clean_effects(screen, bufs: DeviceBuffers, compare_to: Optional[OutputSnapshot] = None,
                   bounds: Callable[[Buffer], Optional[Bounds]] = lambda spec: None,
                   reference: Optional[_Reference] = None) -> bool:
    """Whether the last launch left every guard intact, every ``in`` buffer equal to its
    pristine copy and (given ``compare_to``) every output within ``bounds(spec)`` of
    ``compare_to`` (``None`` bounds: bit for bit), judged on the device (module doc). Given
    the baseline's ``reference`` (``compare_to`` its snapshot), a float output that is
    constant where the reference's varies must also be within the default bounds
    (``compare.constant_where_varying``)."""
    if bufs.guard_damage() is not None:
        return False
    for spec in bufs.input_specs():
        if screen.differing_bytes(bufs.data_ptr(spec.name), bufs.pristine_ptr(spec.name),
                                  spec.nbytes):
            return False
    if compare_to is None:
        return True
    for spec in bufs.output_specs():
        b = bounds(spec)
        ref, cand = compare_to.ptr(spec.name), bufs.data_ptr(spec.name)
        bad = (screen.differing_bytes(ref, cand, spec.nbytes) if b is None
               else screen.flagged(ref, cand, spec.dtype, spec.length, b))
        if bad:
            return False
        if reference is not None and _constant_where_varying(screen, spec, ref, cand,
                                                             reference):
            return False
    return True


def _constant_where_varying(screen, spec: Buffer, ref: int, cand: int,
                            reference: _Reference) -> bool:
    """The device's ``compare.constant_where_varying`` for output ``spec`` at ``cand``
    against the baseline's at ``ref``: whether the host would find a violation. Narrow floats
    (bfloat16, float8) are not checked: the screen has no kernel for them and the host check
    (``compare.constant_where_varying``) sees their bits, not values."""
    if (not is_float(spec.dtype) or elements.is_narrow(spec.dtype)
            or spec.dtype not in DEFAULT_RTOL or spec.length < 2):
        return False
    if screen.unlike_first(cand, spec.dtype, spec.length) or not reference.varies(spec, screen):
        return False
    return screen.flagged(ref, cand, spec.dtype, spec.length,
                          reference.default_bounds(spec, screen)) > 0


def _baseline_reference(session: GpuSession, problem: Problem, baseline: CompiledVariant,
                        ci: int, case: Case, seed: int, inputs, bufs: _CaseBuffers,
                        timeout_s: float, screen=None) -> _Reference:
    where = f"case '{case.label}', seed {seed}"
    runs: list[Optional[RunResult]] = []  # None: the screen found the launch clean
    for attempt in range(2):
        try:
            if screen is None:
                runs.append(run_once(session, baseline, ci, bufs.get(), timeout_s))
                continue
            launch_once(session, baseline, ci, bufs.get(), timeout_s)
            if attempt == 0:
                bufs.ref = bufs.get().snapshot_outputs(bufs.ref, session.stream)
                session.stream.synchronize()
                clean = _clean_effects(screen, bufs.get())
            else:  # the second run must repeat the first bit for bit, unless atomics
                clean = _clean_effects(screen, bufs.get(),
                                       None if problem.atomics else bufs.ref)
            runs.append(None if clean else read_back(session, bufs.get()))
        except LaunchFailure as e:
            session.after_failure(str(e))
            raise BaselineError(f"the baseline failed to run ({where}): {e}") from e
        except KernelTimeout as e:
            raise BaselineError(f"the baseline did not finish ({where}): {e}") from e
    if screen is None:
        reference = _Reference(runs[0].outputs)
    else:
        reference = _Reference(_LazyOutputs(bufs.ref), bufs.ref)
    first = runs[0] or RunResult(outputs=dict(reference.outputs))
    for run in runs:
        if run is None:
            continue
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
    second = runs[1]
    if not problem.atomics and second is not None:
        for name, values in first.outputs.items():
            d = changed(values, second.outputs[name])
            if d:
                raise BaselineError(
                    f"the baseline gave different values for '{name}' in two runs on the same "
                    f"inputs ({where}, index {d.index}: {fmt(d.expected)}, then "
                    f"{fmt(d.actual)}); if it uses atomics, mark the spec 'atomics'")
    return reference


def verify(session: GpuSession, problem: Problem, baseline: CompiledVariant,
           candidates: Sequence[CompiledVariant], *, timeout_s: float = 10.0,
           on_event: OnEvent = None, screen=None) -> dict[str, Verdict]:
    """Verdicts (failing ones; a candidate absent from the result passed) keyed by variant
    label; ``screen`` a ``gpu_runner.screen.DeviceScreen`` to check on the device first
    (module doc). Needs the session's context current. Raises ``BaselineError``."""
    failed: dict[str, Verdict] = {}
    say = emit_to(on_event)
    for seed in problem.seeds:
        for ci, case in enumerate(problem.cases):
            if case.captured is not None and seed != problem.seeds[0]:
                continue  # a captured case has the same values for every seed
            live = [c for c in candidates if c.variant.label not in failed]
            inputs, captured = _case_values(case, seed)
            case_screen = None if captured is not None else screen
            bufs = _CaseBuffers(session, case, inputs)
            try:
                say(Verifying(baseline.variant.label, case.label, seed, baseline=True))
                reference = _baseline_reference(session, problem, baseline, ci, case, seed,
                                                inputs, bufs, timeout_s, case_screen)
                if captured is not None:
                    _check_reproduced(problem, case, reference.outputs, captured)
                for cand in live:
                    label = cand.variant.label
                    say(Verifying(label, case.label, seed))
                    verdict = _judge(session, problem, cand, ci, case, seed, inputs, bufs,
                                     reference, timeout_s, case_screen, captured)
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


def _case_values(case: Case, seed: int):
    """``(inputs, captured results or None)`` of one (seed, case); a captured case whose data
    cannot be used raises ``BaselineError`` (nothing can be checked on it)."""
    try:
        inputs = make_inputs(case, seed)
        return inputs, (captured_results(case) if case.captured is not None else None)
    except CapturedDataError as e:
        raise BaselineError(f"the captured case cannot be used: {e}") from e


def _check_reproduced(problem: Problem, case: Case, outputs: Mapping[str, np.ndarray],
                      captured: Mapping[str, np.ndarray]) -> None:
    """Raise ``BaselineError`` unless the baseline's re-run on the captured inputs matches the
    captured results within the problem's tolerance (the runner's compile flags may differ
    from the program's build, so not bit for bit)."""
    for name, expected in captured.items():
        bounds = resolve_bounds(str(expected.dtype), problem.tolerance,
                                lambda e=expected: output_scale(e))
        d = mismatch(expected, outputs[name], bounds)
        if d:
            raise BaselineError(
                f"the captured launch is not reproduced: re-running the original kernel on the "
                f"captured inputs gives '{name}' index {d.index} = {fmt(d.actual)}, the captured "
                f"run {fmt(d.expected)} ({d.count} of {d.total} elements differ); the kernel "
                f"depends on state outside its parameters (globals, other buffers), aliases "
                f"its parameters, or races; this capture is not used")


def _judge(session, problem, cand, ci, case, seed, inputs, bufs, reference, timeout_s,
           screen=None, captured=None):
    label = cand.variant.label
    runs: list[Optional[RunResult]] = []  # None: the screen found the launch clean
    for attempt in range(2):
        when = " (second run)" if attempt else ""
        try:
            if screen is None:
                runs.append(run_once(session, cand, ci, bufs.get(), timeout_s))
            else:
                launch_once(session, cand, ci, bufs.get(), timeout_s)
                runs.append(_screened(session, problem, bufs, reference, screen, attempt))
        except LaunchFailure as e:
            session.after_failure(str(e))
            return launch_verdict(label, case, seed, str(e), when)
        except KernelTimeout as e:
            return timeout_verdict(label, case, seed, str(e), when)
        except session.drv.Error as e:  # a screen kernel or copy failed after a kernel fault
            session.after_failure(str(e))
            return launch_verdict(label, case, seed, str(e), when)
        if runs[-1] is None:
            continue
        if attempt == 0:
            verdict = judge_run(label, case, seed, inputs, runs[0], reference.outputs,
                                problem.tolerance)
            if verdict is None and captured is not None:  # and the real run's results
                verdict = judge_run(label, case, seed, inputs, runs[0], captured,
                                    problem.tolerance, reference_name="the captured results")
        else:
            first = runs[0] or RunResult(outputs={n: bufs.first.read(n)
                                                  for n in bufs.first.specs})
            verdict = judge_repeat(label, case, seed, inputs, first, runs[1],
                                   reference.outputs, problem.tolerance, problem.atomics)
        if verdict is not None:
            return verdict
    return None


def _screened(session, problem, bufs, reference, screen, attempt) -> Optional[RunResult]:
    """None when the screen finds the candidate's launch clean; else its effects read back
    for the host's judgement. After a first run its outputs are kept on the device, for the
    second run to be compared with."""
    dev = bufs.get()
    if attempt == 0:
        clean = _clean_effects(screen, dev, bufs.ref,
                               lambda spec: reference.bounds(spec, problem.tolerance, screen),
                               reference)
        bufs.first = dev.snapshot_outputs(bufs.first, session.stream)
        session.stream.synchronize()
    else:
        bounds = ((lambda spec: reference.bounds(spec, problem.tolerance, screen))
                  if problem.atomics else (lambda spec: None))
        clean = _clean_effects(screen, dev, bufs.first, bounds)
    return None if clean else read_back(session, dev)


def _skip_rest(candidates, failed, why: str) -> None:
    for c in candidates:
        if c.variant.label not in failed:
            failed[c.variant.label] = Verdict(
                variant=c.variant.label, status="launch_error",
                reason=f"not verified: {why}", not_judged=True)
