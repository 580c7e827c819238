"""Timing the baseline and the candidates on the timed case (docs/architecture.md, "Timing").

All variants share one set of device buffers holding the inputs of the first seed. Each launch
is prepared the same way, in stream order, outside the timed region: restore the ``inout``
buffers from their pristine copies, poison the outputs, then flush the L2 cache over a buffer
of twice its size (``l2flush``; by default by reading it, so the cache holds no dirty lines the
timed kernel would have to write back), so every variant starts from a cold cache, not from
the previous variant's data; then a CUDA event, the kernel, a CUDA event, all on the session's one
stream. ``elapsed(start, end)`` is the kernel's duration. The host waits for each launch
before enqueueing the next, which costs nothing in the timed region (the next kernel is queued
while the flush runs) and tells exactly which variant faulted.

``warmup`` untimed launches of each variant come first. Then the variants run interleaved in
rounds, one launch each, the order rotated by one every round, so drift (clocks, temperature)
hits all of them alike. It stops after ``repetitions`` rounds, or earlier once another round
would overrun ``time_budget_s`` (never before ``MIN_ROUNDS``); once a stop condition holds,
``CLOSING_ROUNDS`` more rounds are run (fewer where the cap comes first), so the budget can be
overrun by one round.

Checked rounds. The closing rounds, and ``SPOT_CHECKS`` rounds drawn at random (seeded) from
the whole loop, are *checked*: before each launch every input buffer is restored and every
guard refilled too, and each variant's outputs, inputs and guards are read back right after its
launch. ``TimingRun.last`` holds, per variant, the checked launch that differs most from the
baseline's (``variants[0]``) launch in the same round (``divergence``; ties: the later one), and
the runner judges it (``verdicts.judge_stale``). Checking only the very last launch let a
kernel that works on every other call after verification (``tests/data/runner/adversarial/
saxpy_alternate_late.cu``) pass half the time with a median of half-empty launches; two
consecutive closing launches catch any such alternation, and the spot checks catch a kernel
that skips a share ``f`` of its calls with probability ``1 - (1 - f) ** (SPOT_CHECKS + 2)``.

With ``target_ci_pct`` (``TARGET_CI_PCT`` = 1% is the contract's value) the loop also stops,
after at least ``MIN_ROUNDS`` rounds, once every variant's median has a 95% confidence interval
(``stats.median_ci``) whose half width is within ``target_ci_pct`` percent of the median.
``TimingRun.stop_reason`` says which end came first: ``"converged"``, ``"budget"`` or
``"repetitions"``.

Before the warm-up, persisting L2 lines are reset to normal (``l2flush.reset_persisting_l2``);
right after the last round the SM clock and the clocks event reasons are read from NVML
(``throttle.ClockProbe``). ``timing_of(..., run=run)`` copies both into every ``Timing``,
with the median's confidence interval and the roofline check (``roofline``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from gpu_runner.buffers import DeviceBuffers
from gpu_runner.compare import changed
from gpu_runner.compiler import CompiledVariant
from gpu_runner.events import OnEvent, TimingRound, WarmingUp, emit_to
from gpu_runner.inputs import make_inputs
from gpu_runner.l2flush import L2Flusher, reset_persisting_l2
from gpu_runner.launch import launch_kernel
from gpu_runner.problem import Buffer, Case
from gpu_runner.report import Timing
from gpu_runner.roofline import check as roofline_check
from gpu_runner.session import GpuSession, KernelTimeout, LaunchFailure
from gpu_runner.stats import median_ci, median_ci_half_width_pct, summarize
from gpu_runner.throttle import ClockProbe, ClockSample, unknown
from gpu_runner.verdicts import RunResult

MIN_ROUNDS = 5
CLOSING_ROUNDS = 2  # checked rounds after the stop condition (see the module doc)
SPOT_CHECKS = 3  # checked rounds drawn at random from the loop (each costs a read-back)
TARGET_CI_PCT = 1.0  # issue 3: repeat until the median's 95% CI half width is within 1%


class VariantFault(RuntimeError):
    """Variant ``label`` failed during timing (``timeout``: it did not finish)."""

    def __init__(self, label: str, message: str, timeout: bool = False):
        super().__init__(message)
        self.label = label
        self.timeout = timeout


@dataclass
class TimingRun:
    """Per-variant durations in microseconds (in round order), and the effects of each
    variant's last timed launch, on the inputs drawn with ``seed``."""

    seed: int
    inputs: dict[str, np.ndarray]
    samples_us: dict[str, list[float]] = field(default_factory=dict)
    last: dict[str, RunResult] = field(default_factory=dict)
    rounds: int = 0
    stop_reason: str = ""  # "converged", "budget" or "repetitions"
    clock: ClockSample = field(default_factory=lambda: unknown("not sampled"))
    persisting_l2: str = ""


def converged(samples_us: dict[str, list[float]], target_ci_pct: float) -> bool:
    """Whether every variant's median has a 95% CI half width within ``target_ci_pct``
    percent of it (``stats.median_ci_half_width_pct``); False while any has no samples."""
    return all(s and median_ci_half_width_pct(s) <= target_ci_pct for s in samples_us.values())


def timing_of(label: str, samples_us: Sequence[float], case: Case,
              copy_bandwidth_gbps: float, *, run: TimingRun | None = None,
              l2_bytes: int | None = None, peak_gflops: float = 0.0) -> Timing:
    """``Timing`` of one variant: quartiles of ``samples_us``; achieved GB/s =
    ``case.bytes_moved`` / median (bytes per microsecond / 1000); percent of the measured
    copy bandwidth; GFLOP/s = ``case.flops`` / median when flops are known; the median's 95%
    confidence interval; the roofline check (``roofline.check`` with ``l2_bytes`` and
    ``peak_gflops``); and, given the ``run`` the samples came from, its stop reason, NVML
    clock sample and persisting-L2 reset. Raises ``ValueError`` for empty samples."""
    s = summarize(samples_us)
    gbps = case.bytes_moved / s.median / 1e3 if case.bytes_moved else 0.0
    low, high = median_ci(samples_us)
    roof = roofline_check(s.median, case, copy_bandwidth_gbps, l2_bytes=l2_bytes,
                          peak_gflops=peak_gflops)
    extra = {}
    if run is not None:
        extra = {"stop_reason": run.stop_reason, "sm_clock_mhz": run.clock.sm_clock_mhz,
                 "throttle_reasons": run.clock.reasons, "clock_source": run.clock.source,
                 "persisting_l2": run.persisting_l2}
    return Timing(variant=label, median_us=s.median, q1_us=s.q1, q3_us=s.q3, min_us=s.min,
                  samples=s.count, achieved_gbps=gbps,
                  percent_of_copy=gbps / copy_bandwidth_gbps * 100 if copy_bandwidth_gbps else 0.0,
                  gflops=case.flops / s.median / 1e3 if case.flops else 0.0,
                  median_ci_low_us=low, median_ci_high_us=high,
                  ci_half_width_pct=median_ci_half_width_pct(samples_us),
                  roofline_floor_us=roof.floor_us, above_roofline=roof.above,
                  roofline_note=roof.note, **extra)


def time_variants(session: GpuSession, case: Case, seed: int,
                  variants: Sequence[CompiledVariant], *, l2_bytes: int, repetitions: int = 50,
                  warmup: int = 3, time_budget_s: float = 60.0, timeout_s: float = 10.0,
                  flush_mode: str = "read",
                  on_event: OnEvent = None,
                  target_ci_pct: float | None = None,
                  clock_probe: Callable[[], ClockSample] | None = None,
                  screen=None) -> TimingRun:
    """Time ``variants`` (each with its first launch) on ``case``; see the module doc.

    ``screen``: a ``gpu_runner.screen.DeviceScreen``; checked launches are then compared on
    the device and only the chosen one per variant is read back (``_ScreenedChecks``).
    ``target_ci_pct``: stop once every median's 95% CI half width is within this many percent
    (None: run ``repetitions`` rounds or until the budget ends). ``clock_probe()`` returns the
    clock sample taken after the last round (None: NVML for the session's device).

    Needs the session's context current. Raises ``VariantFault`` naming the variant whose
    launch failed or timed out (the caller may retry without it if the session is usable), and
    ``ValueError`` for ``repetitions`` < 1 or a ``target_ci_pct`` that is not positive.
    """
    if repetitions < 1:
        raise ValueError(f"repetitions must be at least 1, found {repetitions}")
    if target_ci_pct is not None and not target_ci_pct > 0:
        raise ValueError(f"target_ci_pct must be a positive percentage, found {target_ci_pct}")
    drv, stream = session.drv, session.stream
    say = emit_to(on_event)
    inputs = make_inputs(case, seed)
    run = TimingRun(seed=seed, inputs=inputs,
                    samples_us={v.variant.label: [] for v in variants})
    bufs = DeviceBuffers(drv, case, inputs)
    try:
        flush = L2Flusher(session, l2_bytes, flush_mode)
    except BaseException:
        bufs.free()
        raise
    events = {v.variant.label: (drv.Event(), drv.Event()) for v in variants}

    def one(v: CompiledVariant, checked: bool) -> float:
        roles = ("in", "inout") if checked else ("inout",)
        label = v.variant.label
        start, end = events[label]
        try:
            fn = v.function
            bufs.restore(stream, roles)
            if checked:
                bufs.reset_guards(stream)
            bufs.poison(stream)
            flush.flush(stream)
            start.record(stream)
            launch_kernel(drv, fn, bufs, v.variant.launches[0], stream)
            end.record(stream)
            session.wait(end, timeout_s)
            return end.time_since(start) * 1e3
        except drv.Error as e:
            raise VariantFault(label, f"{label}: {e}") from e
        except LaunchFailure as e:
            raise VariantFault(label, f"{label}: {e}") from e
        except KernelTimeout as e:
            raise VariantFault(label, f"{label}: {e}", timeout=True) from e

    kept = (_ScreenedChecks(session, screen, bufs, variants[0].variant.label, inputs)
            if screen is not None else None)
    probe = None
    if clock_probe is None:
        probe = ClockProbe(session.device.pci_bus_id())
        clock_probe = probe.sample
    try:
        run.persisting_l2 = reset_persisting_l2(drv)
        say(WarmingUp(warmup, len(variants)))
        for _ in range(warmup):
            for v in variants:
                one(v, False)
        deadline = time.monotonic() + time_budget_s
        min_rounds = min(MIN_ROUNDS, repetitions)
        last_round_s = 0.0
        spots = spot_rounds(seed, repetitions)
        base_label = variants[0].variant.label
        worst: dict[str, int] = {}
        closing = 0
        for r in range(repetitions):
            started = time.monotonic()
            if not closing:
                run.stop_reason = stop_reason(r, repetitions, min_rounds,
                                              started + last_round_s > deadline,
                                              target_ci_pct is not None and r >= min_rounds
                                              and converged(run.samples_us, target_ci_pct))
                if run.stop_reason:
                    closing = min(CLOSING_ROUNDS, repetitions - r)
            checked = bool(closing) or r in spots
            k = r % len(variants)
            seen: dict[str, RunResult] = {}
            for v in list(variants[k:]) + list(variants[:k]):
                label = v.variant.label
                run.samples_us[label].append(one(v, checked))
                if checked:
                    try:
                        if kept is not None:
                            kept.launched(label)
                        else:
                            seen[label] = RunResult(
                                outputs=bufs.read_outputs(),
                                inputs_after={a.name: bufs.read(a.name) for a in case.args
                                              if isinstance(a, Buffer) and a.role == "in"},
                                guard=bufs.guard_damage())
                    except drv.Error as e:
                        raise VariantFault(label, f"{label}: reading results back: {e}") from e
            if checked and kept is not None:
                kept.round_done()
            if checked and kept is None:
                for label, result in seen.items():
                    score = (0 if label == base_label
                             else divergence(result, seen[base_label], inputs))
                    if score >= worst.get(label, -1):
                        worst[label] = score
                        run.last[label] = result
            run.rounds = r + 1
            last_round_s = time.monotonic() - started
            final = closing == 1
            if (r + 1) % 10 == 0 or final:
                say(TimingRound(r + 1, repetitions))
            if closing:
                closing -= 1
                if not closing:
                    break
        run.clock = clock_probe()
        if kept is not None:
            run.last.update(kept.results())
    finally:
        if kept is not None:
            kept.free()
        if probe is not None:
            probe.close()
        if session.wedged:
            session.retain((bufs, flush))
        else:
            bufs.free()
            flush.free()
    return run


def stop_reason(round_index: int, repetitions: int, min_rounds: int, over_budget: bool,
                is_converged: bool) -> str:
    """Why the closing rounds start at round ``round_index`` (from 0), or "" when they do not:
    ``"converged"`` (after ``min_rounds`` rounds, the medians are tight enough), ``"budget"``
    (another round would overrun the time budget, from the ``min_rounds``-th round on),
    ``"repetitions"`` (the cap is ``CLOSING_ROUNDS`` rounds away or fewer). The first that
    holds, in that order."""
    if round_index + 1 > min_rounds and is_converged:
        return "converged"
    if round_index + 1 >= min_rounds and over_budget:
        return "budget"
    if round_index >= repetitions - CLOSING_ROUNDS:
        return "repetitions"
    return ""


def spot_rounds(seed: int, repetitions: int, count: int = SPOT_CHECKS) -> frozenset[int]:
    """``count`` distinct round indices in ``[0, repetitions)`` (all of them when fewer),
    drawn with a generator seeded by ``seed``, so a run can be replayed."""
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 0x5C07])
    picks = rng.choice(repetitions, size=min(count, repetitions), replace=False)
    return frozenset(int(i) for i in picks)


def divergence(result: RunResult, reference: RunResult, inputs: dict[str, np.ndarray]) -> int:
    """How far one checked launch of a candidate (``result``) is from the baseline's launch
    in the same round (``reference``): ``sys.maxsize`` when a guard was hit, else the number
    of output elements whose bits differ from the reference's plus the number of ``in``
    elements that differ from ``inputs``. 0 for a launch that repeats the baseline exactly."""
    if result.guard is not None:
        return sys.maxsize
    count = 0
    for name, after in result.inputs_after.items():
        d = changed(inputs[name], after)
        count += d.count if d else 0
    for name, values in result.outputs.items():
        ref = reference.outputs.get(name)
        if ref is not None:
            d = changed(ref, values)
            count += d.count if d else 0
    return count


class _ScreenedChecks:
    """The checked rounds' bookkeeping on the device, with the same outcome as reading every
    checked launch back: after each checked launch its outputs are copied (on the device) into
    a per-variant round snapshot, and guards and ``in`` buffers are screened
    (``screen.DeviceScreen``); a launch that damaged a guard or an input is read back at once
    (it is what the runner will judge). After the round each candidate's outputs are compared
    with the baseline's of the same round, bit for bit on the device; the count of differing
    words plays ``divergence``'s part, and the snapshot of each variant's most divergent launch
    (ties: the later) is kept. ``results()`` reads back only those."""

    def __init__(self, session, screen, bufs: DeviceBuffers, base_label: str,
                 inputs: dict[str, np.ndarray]):
        self.session, self.screen, self.bufs = session, screen, bufs
        self.base_label, self.inputs = base_label, inputs
        self.round: dict[str, object] = {}  # label -> OutputSnapshot of this round
        self.worst: dict[str, object] = {}  # label -> OutputSnapshot of the chosen launch
        self.score: dict[str, int] = {}
        self.read: dict[str, RunResult] = {}  # launches that damaged a guard or an input
        self.spare: list = []

    def launched(self, label: str) -> None:
        dev, stream = self.bufs, self.session.stream
        snap = self.round.get(label) or (self.spare.pop() if self.spare else None)
        self.round[label] = dev.snapshot_outputs(snap, stream)
        stream.synchronize()
        damaged = dev.guard_damage() is not None or any(
            self.screen.differing_bytes(dev.data_ptr(s.name), dev.pristine_ptr(s.name), s.nbytes)
            for s in dev.input_specs())
        if damaged and label != self.base_label:
            self.read[label] = RunResult(
                outputs=dev.read_outputs(),
                inputs_after={s.name: dev.read(s.name) for s in dev.input_specs()},
                guard=dev.guard_damage())
            self.score[label] = sys.maxsize

    def round_done(self) -> None:
        base = self.round[self.base_label]
        for label, snap in list(self.round.items()):
            if label in self.read:
                continue
            score = 0 if label == self.base_label else sum(
                self.screen.differing_bytes(base.ptr(s.name), snap.ptr(s.name), s.nbytes)
                for s in self.bufs.output_specs())
            if score >= self.score.get(label, -1):
                self.score[label] = score
                old = self.worst.get(label)
                self.worst[label] = snap
                self.round[label] = old  # reused for the next round
            if self.round[label] is None:
                del self.round[label]

    def results(self) -> dict[str, RunResult]:
        out = dict(self.read)
        for label, snap in self.worst.items():
            if label not in out:
                out[label] = RunResult(outputs={n: snap.read(n) for n in snap.specs},
                                       inputs_after=dict(self.inputs), guard=None)
        return out

    def free(self) -> None:
        for snap in list(self.round.values()) + list(self.worst.values()) + self.spare:
            if snap is not None:
                snap.free()
        self.round, self.worst, self.spare = {}, {}, []
