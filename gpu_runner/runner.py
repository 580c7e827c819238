"""The runner's library API: ``Runner.device_info()`` and ``Runner.evaluate(...)``.

``evaluate`` does, in order: compile the baseline and every candidate (a compile failure is a
``compile_error`` verdict; a baseline that does not compile ends the evaluation with
``Evaluation.error``); verify every compiled candidate against the baseline (``verify``);
time the baseline and the passing candidates interleaved (``timing``); compare each timed
candidate's last timed launch with the baseline's (``stale_after_timing``); and return an
``Evaluation`` whose candidates are in the order given.

This module imports without pycuda; making a ``Runner`` needs pycuda and a GPU and raises
``NoGpuError`` (re-exported here) saying what is missing.
"""

from __future__ import annotations

import weakref
from typing import Optional, Sequence

from gpu_runner.compiler import CompiledVariant, compile_variant
from gpu_runner.events import (Compiled, Compiling, Note, OnEvent, Rejected, Timed, Verified,
                               emit_to)
from gpu_runner.problem import Problem, Variant
from gpu_runner.report import (CandidateResult, DeviceInfo, Evaluation, Speedup, Timing,
                               Verdict)
from gpu_runner.session import GpuSession, NoGpuError
from gpu_runner.stats import ratio_of_medians_ci
from gpu_runner.timing import TARGET_CI_PCT, VariantFault, time_variants, timing_of
from gpu_runner.screen import DeviceScreen
from gpu_runner.verdicts import judge_stale, launch_verdict, timeout_verdict
from gpu_runner.verify import BaselineError, verify

__all__ = ["Runner", "NoGpuError"]


def _check_request(problem: Problem, baseline: Variant, candidates: Sequence[Variant]) -> None:
    if not problem.cases:
        raise ValueError(f"problem '{problem.kernel}' has no cases")
    if not problem.seeds:
        raise ValueError(f"problem '{problem.kernel}' has no seeds")
    labels = [baseline.label] + [c.label for c in candidates]
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise ValueError(f"variant labels must be unique; repeated: {', '.join(dupes)}")
    for v in [baseline, *candidates]:
        if len(v.launches) != len(problem.cases):
            raise ValueError(f"variant '{v.label}' has {len(v.launches)} launch(es), expected "
                             f"one per case ({len(problem.cases)})")


_PASSED = "matches the baseline on every case and seed, twice"


class Runner:
    """Compiles, verifies and times kernels on one GPU (``device_index``).

    Raises ``NoGpuError`` when pycuda, the CUDA driver or a GPU is missing. Use it from the
    thread that created it; ``close()`` (or ``with Runner() as r:``) releases the GPU context.
    ``l2_flush`` is how the L2 cache is emptied before each timed launch (``"read"`` or
    ``"write"``, see ``l2flush``). ``launch_timeout_s`` bounds every kernel's run time. A kernel that faults or times out
    leaves the GPU unusable in this process (see ``session``): the evaluation reports it and the
    candidates not yet verified, and later calls raise ``RuntimeError``.
    """

    def __init__(self, device_index: int = 0, *, launch_timeout_s: float = 10.0,
                 compile_cache_dir=None, l2_flush: str = "read"):
        self._session = GpuSession(device_index)
        self._finalizer = weakref.finalize(self, self._session.close)
        self._info: Optional[DeviceInfo] = None
        self.launch_timeout_s = launch_timeout_s
        self.compile_cache_dir = compile_cache_dir
        self.l2_flush = l2_flush
        self._screen_state = None  # DeviceScreen, or False when it could not be built

    def close(self) -> None:
        self._finalizer()

    def _screen(self, say) -> Optional[DeviceScreen]:
        """The session's verification screen (``gpu_runner.screen``), made on first use; None
        (checks on the host only, slower) when its kernels cannot be built here."""
        if self._screen_state is None:
            try:
                self._screen_state = DeviceScreen(self._session)
            except RuntimeError as e:
                say(Note(f"verification on the host only: {e}"))
                self._screen_state = False
        return self._screen_state or None

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def device_info(self) -> DeviceInfo:
        """The device's facts, with the copy bandwidth measured on the first call (cached)."""
        if self._info is None:
            from gpu_runner.device import device_info  # noqa: PLC0415 (GPU-only module)

            with self._session.active():
                self._info = device_info(self._session)
        return self._info

    def evaluate(self, problem: Problem, baseline: Variant, candidates: Sequence[Variant], *,
                 repetitions: int = 50, warmup: int = 3, time_budget_s: float = 60.0,
                 on_event: OnEvent = None) -> Evaluation:
        """Compile, verify and time ``candidates`` against ``baseline`` on ``problem``.

        ``repetitions``: timed rounds (each variant once per round), at most; ``warmup``:
        untimed launches of each variant first; ``time_budget_s``: wall-clock budget of the
        timing loop. ``on_event(event)`` is called with the ``gpu_runner.events`` of each step
        (compiling, verifying, each candidate's verdict, timing rounds, times). Raises
        ``ValueError`` for a malformed request (no cases, duplicate labels, launches not one per
        case) and ``RuntimeError`` when an earlier kernel timeout left the GPU unusable.
        """
        _check_request(problem, baseline, candidates)
        self._session.check_usable()
        say = emit_to(on_event)
        info = self.device_info()
        with self._session.active():
            return self._evaluate(problem, baseline, candidates, info, repetitions, warmup,
                                  time_budget_s, say)

    # -- the steps -------------------------------------------------------------------------

    def _compile(self, variant: Variant, say) -> CompiledVariant:
        say(Compiling(variant.label))
        compiled = compile_variant(self._session, variant, cache_dir=self.compile_cache_dir)
        log = compiled.report.log.strip().splitlines()
        say(Compiled(variant.label, compiled.report.ok,
                     "" if compiled.report.ok else " ".join(log[1:2] or log[:1])))
        return compiled

    def _evaluate(self, problem, baseline, candidates, info, repetitions, warmup,
                  time_budget_s, say) -> Evaluation:
        base = self._compile(baseline, say)
        if not base.report.ok:
            return Evaluation(device=info, baseline_compile=base.report, baseline=None,
                              error=f"the baseline did not compile: {base.report.log}")
        compiled = [self._compile(c, say) for c in candidates]
        verdicts: dict[str, Verdict] = {}
        for c in compiled:
            if not c.report.ok:
                first = c.report.log.strip().splitlines()
                verdicts[c.variant.label] = Verdict(
                    variant=c.variant.label, status="compile_error",
                    reason=f"{c.variant.label} did not compile: "
                           f"{' '.join(first[1:2] or first[:1])}")
        runnable = [c for c in compiled if c.report.ok]
        try:
            verdicts.update(verify(self._session, problem, base, runnable,
                                   timeout_s=self.launch_timeout_s, on_event=say,
                                   screen=self._screen(say)))
        except BaselineError as e:
            # Nothing can be judged against this baseline: no candidate results at all.
            return Evaluation(device=info, baseline_compile=base.report, baseline=None,
                              error=str(e))

        for c in compiled:
            label = c.variant.label
            if label in verdicts:
                say(Rejected(label, verdicts[label]))
            else:
                say(Verified(label, _PASSED))
        passing = [c for c in runnable if c.variant.label not in verdicts]
        timings: dict[str, Timing] = {}
        speedups: dict[str, Speedup] = {}
        if self._session.wedged:
            error = f"timing skipped: {self._session.wedged}"
        else:
            error = self._time(problem, info, base, passing, verdicts, timings, speedups,
                               repetitions, warmup, time_budget_s, say)
        return self._result(info, base, timings.get(baseline.label), compiled, verdicts,
                            timings, speedups, error)

    def _time(self, problem, info, base, passing, verdicts, timings, speedups, repetitions,
              warmup, time_budget_s, say) -> str:
        case = problem.timed_case
        seed = problem.seeds[0]
        while True:
            variants = [base] + [c for c in passing if c.variant.label not in verdicts]
            try:
                run = time_variants(self._session, case, seed, variants, l2_bytes=info.l2_bytes,
                                    repetitions=repetitions, warmup=warmup,
                                    time_budget_s=time_budget_s,
                                    timeout_s=self.launch_timeout_s,
                                    flush_mode=self.l2_flush, on_event=say,
                                    target_ci_pct=TARGET_CI_PCT, screen=self._screen(say))
                break
            except VariantFault as fault:
                wedged = fault.timeout or self._session.after_failure(str(fault))
                if fault.label == base.variant.label:
                    return f"the baseline failed while being timed: {fault}"
                make = timeout_verdict if fault.timeout else launch_verdict
                verdicts[fault.label] = make(fault.label, case, seed, str(fault),
                                             " (while timing)")
                say(Rejected(fault.label, verdicts[fault.label]))
                if wedged:
                    return f"timing stopped: {self._session.wedged}"
        reference = run.last[base.variant.label].outputs
        for label, samples in run.samples_us.items():
            timings[label] = timing_of(label, samples, case, info.copy_bandwidth_gbps, run=run,
                                       l2_bytes=info.l2_bytes)
        for c in variants[1:]:
            label = c.variant.label
            stale = judge_stale(label, case, seed, run.inputs, run.last[label], reference,
                                problem.tolerance)
            if stale is not None:
                verdicts[label] = stale
                say(Rejected(label, stale))
                say(Timed(label, timings[label].median_us))
                continue
            value, low, high = ratio_of_medians_ci(run.samples_us[base.variant.label],
                                                   run.samples_us[label])
            speedups[label] = Speedup(value=value, ci_low=low, ci_high=high)
        say(Timed(base.variant.label, timings[base.variant.label].median_us))
        for c in variants[1:]:
            label = c.variant.label
            if label in speedups:
                say(Timed(label, timings[label].median_us, speedups[label]))
        return ""

    @staticmethod
    def _result(info, base, base_timing, compiled, verdicts, timings, speedups,
                error) -> Evaluation:
        results = []
        for c in compiled:
            label = c.variant.label
            verdict = verdicts.get(label)
            if verdict is None:
                reason = _PASSED
                reason += (", and again after the timing loop" if label in speedups
                           else f"; not timed: {error}")
                verdict = Verdict(variant=label, status="passed", reason=reason)
            results.append(CandidateResult(
                compile=c.report, verdict=verdict,
                timing=timings.get(label) if verdict.ok else None,
                speedup=speedups.get(label) if verdict.ok else None))
        return Evaluation(device=info, baseline_compile=base.report, baseline=base_timing,
                          candidates=tuple(results), error=error)
