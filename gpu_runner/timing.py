"""Timing the baseline and the candidates on the timed case (ARCHITECTURE.md, "Timing").

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
would overrun ``time_budget_s`` (never before ``MIN_ROUNDS``). In the last round every input
buffer is restored and every guard refilled before each launch too, and each variant's outputs, inputs and guards are read back right
after its launch, for the post-timing check.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from gpu_runner.buffers import DeviceBuffers
from gpu_runner.compiler import CompiledVariant
from gpu_runner.inputs import make_inputs
from gpu_runner.l2flush import L2Flusher
from gpu_runner.launch import launch_kernel
from gpu_runner.problem import Buffer, Case
from gpu_runner.report import Timing
from gpu_runner.session import GpuSession, KernelTimeout, LaunchFailure
from gpu_runner.stats import summarize
from gpu_runner.verdicts import RunResult

MIN_ROUNDS = 5


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


def timing_of(label: str, samples_us: Sequence[float], case: Case,
              copy_bandwidth_gbps: float) -> Timing:
    """``Timing`` of one variant: quartiles of ``samples_us``; achieved GB/s =
    ``case.bytes_moved`` / median (bytes per microsecond / 1000); percent of the measured
    copy bandwidth; GFLOP/s = ``case.flops`` / median when flops are known."""
    s = summarize(samples_us)
    gbps = case.bytes_moved / s.median / 1e3 if case.bytes_moved else 0.0
    return Timing(variant=label, median_us=s.median, q1_us=s.q1, q3_us=s.q3, min_us=s.min,
                  samples=s.count, achieved_gbps=gbps,
                  percent_of_copy=gbps / copy_bandwidth_gbps * 100 if copy_bandwidth_gbps else 0.0,
                  gflops=case.flops / s.median / 1e3 if case.flops else 0.0)


def time_variants(session: GpuSession, case: Case, seed: int,
                  variants: Sequence[CompiledVariant], *, l2_bytes: int, repetitions: int = 50,
                  warmup: int = 3, time_budget_s: float = 60.0, timeout_s: float = 10.0,
                  flush_mode: str = "read",
                  progress: Optional[Callable[[str], None]] = None) -> TimingRun:
    """Time ``variants`` (each with its first launch) on ``case``; see the module doc.

    Needs the session's context current. Raises ``VariantFault`` naming the variant whose
    launch failed or timed out (the caller may retry without it if the session is usable), and
    ``ValueError`` for ``repetitions`` < 1.
    """
    if repetitions < 1:
        raise ValueError(f"repetitions must be at least 1, found {repetitions}")
    drv, stream = session.drv, session.stream
    say = progress or (lambda _m: None)
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

    def one(v: CompiledVariant, final_round: bool) -> float:
        roles = ("in", "inout") if final_round else ("inout",)
        label = v.variant.label
        start, end = events[label]
        try:
            fn = v.function
            bufs.restore(stream, roles)
            if final_round:
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

    try:
        say(f"timing: warm-up, {warmup} launch(es) of each of {len(variants)} variant(s)")
        for _ in range(warmup):
            for v in variants:
                one(v, False)
        deadline = time.monotonic() + time_budget_s
        min_rounds = min(MIN_ROUNDS, repetitions)
        last_round_s = 0.0
        for r in range(repetitions):
            started = time.monotonic()
            final = (r == repetitions - 1 or
                     (r + 1 >= min_rounds and started + last_round_s > deadline))
            k = r % len(variants)
            for v in list(variants[k:]) + list(variants[:k]):
                label = v.variant.label
                run.samples_us[label].append(one(v, final))
                if final:
                    try:
                        run.last[label] = RunResult(
                            outputs=bufs.read_outputs(),
                            inputs_after={a.name: bufs.read(a.name) for a in case.args
                                          if isinstance(a, Buffer) and a.role == "in"},
                            guard=bufs.guard_damage())
                    except drv.Error as e:
                        raise VariantFault(label, f"{label}: reading results back: {e}") from e
            run.rounds = r + 1
            last_round_s = time.monotonic() - started
            if (r + 1) % 10 == 0 or final:
                say(f"timing: round {r + 1} of at most {repetitions}")
            if final:
                break
    finally:
        if session.wedged:
            session.retain((bufs, flush))
        else:
            bufs.free()
            flush.free()
    return run
