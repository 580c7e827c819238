"""The timing loop of ``gpu_runner.timing.time_variants`` on a simulated device (no GPU):
how many rounds it runs and why it stops, which launches it checks, and that a kernel which
skips every other timed launch is handed to the post-timing check by its skipped launch."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from gpu_runner import timing
from gpu_runner.compiler import CompiledVariant
from gpu_runner.problem import Buffer, Case, Launch, Scalar, Variant
from gpu_runner.report import CompileReport
from gpu_runner.throttle import ClockSample

N = 64


class Clock:
    now_ms = 0.0


class FakeEvent:
    def record(self, stream):
        self.t = Clock.now_ms

    def time_since(self, other):
        return self.t - other.t


class FakeDrv:
    Event = FakeEvent

    class Error(Exception):
        pass


class FakeSession:
    drv = FakeDrv
    stream = object()
    wedged = ""

    def wait(self, event, timeout_s):
        pass

    def retain(self, obj):
        raise AssertionError("a healthy session retains nothing")


class FakeBuffers:
    """Host arrays standing in for device buffers: restore, poison, read back."""

    made: ClassVar[list[FakeBuffers]] = []

    def __init__(self, drv, case, inputs):
        self.inputs = {k: v.copy() for k, v in inputs.items()}
        self.live = {k: v.copy() for k, v in inputs.items()}
        self.out = {"z": np.zeros(N, dtype=np.float32)}
        self.restores: list[tuple[str, ...]] = []
        self.freed = False
        FakeBuffers.made.append(self)

    def restore(self, stream, roles=("in", "inout")):
        self.restores.append(tuple(roles))
        if "in" in roles:
            self.live = {k: v.copy() for k, v in self.inputs.items()}

    def reset_guards(self, stream):
        pass

    def poison(self, stream):
        self.out["z"][:] = np.nan

    def read_outputs(self):
        return {k: v.copy() for k, v in self.out.items()}

    def read(self, name):
        return self.live[name].copy()

    def guard_damage(self):
        return None

    def free(self):
        self.freed = True


class FakeFlush:
    def __init__(self, session, l2_bytes, mode):
        pass

    def flush(self, stream):
        Clock.now_ms += 0.05

    def free(self):
        pass


def kernel(us: float, skip_every_other: bool = False, skip_us: float = 1.0):
    calls = {"n": 0}

    def run(bufs):
        c = calls["n"]
        calls["n"] += 1
        if skip_every_other and c % 2 == 1:
            Clock.now_ms += skip_us / 1e3
            return
        bufs.out["z"][:] = 2.5 * bufs.live["x"] + 1.0
        Clock.now_ms += us / 1e3
    run.calls = calls
    return run


def compiled(label: str, fn) -> CompiledVariant:
    v = Variant(label=label, source="", name="k",
                launches=(Launch(grid=(1, 1, 1), block=(N, 1, 1)),))
    return CompiledVariant(variant=v, report=CompileReport(variant=label, ok=True), function=fn)


CASE = Case("nominal", (Scalar("n", "int32", N), Buffer("x", "float32", N, "in"),
                        Buffer("z", "float32", N, "out")), bytes_moved=8 * N)


@pytest.fixture
def fake(monkeypatch):
    FakeBuffers.made.clear()
    monkeypatch.setattr(timing, "DeviceBuffers", FakeBuffers)
    monkeypatch.setattr(timing, "L2Flusher", FakeFlush)
    monkeypatch.setattr(timing, "launch_kernel",
                        lambda drv, fn, bufs, launch, stream: fn(bufs))
    monkeypatch.setattr(timing, "reset_persisting_l2", lambda drv: "reset (fake)")
    return FakeSession()


def _time(session, variants, **kw):
    return timing.time_variants(session, CASE, 1, variants, l2_bytes=1 << 20,
                                clock_probe=lambda: ClockSample(1755, (), "nvml"), **kw)


def test_capped_loop_runs_every_round_and_records_the_run(fake):
    base, cand = kernel(10.0), kernel(8.0)
    run = _time(fake, [compiled("base", base), compiled("cand", cand)], repetitions=20,
                warmup=3)
    assert run.rounds == 20 and run.stop_reason == "repetitions"
    assert [len(s) for s in run.samples_us.values()] == [20, 20]
    assert run.samples_us["base"] == pytest.approx([10.0] * 20)
    assert run.samples_us["cand"] == pytest.approx([8.0] * 20)
    assert base.calls["n"] == cand.calls["n"] == 23  # 3 warm-up + 20 timed
    assert run.persisting_l2 == "reset (fake)" and run.clock.sm_clock_mhz == 1755
    # Checked launches restore the 'in' buffers too: the 2 closing rounds and the spot rounds.
    checked = {r for r in timing.spot_rounds(1, 20)} | {18, 19}
    bufs = FakeBuffers.made[0]
    full = sum(1 for roles in bufs.restores if "in" in roles)
    assert full == 2 * len(checked)
    assert bufs.freed
    assert np.all(run.last["cand"].outputs["z"] == run.last["base"].outputs["z"])


def test_a_kernel_skipping_every_other_timed_launch_is_handed_over_by_a_skipped_launch(fake):
    cheat = kernel(8.0, skip_every_other=True)
    # One warm-up launch: the very last launch (call 20) works, so checking only it would pass.
    run = _time(fake, [compiled("base", kernel(10.0)), compiled("cheat", cheat)],
                repetitions=20, warmup=1)
    assert cheat.calls["n"] == 21
    # Its median is the mixture's: the reason the check must see a skipped launch.
    assert np.median(run.samples_us["cheat"]) < 8.0
    assert np.all(np.isnan(run.last["cheat"].outputs["z"]))
    assert not np.any(np.isnan(run.last["base"].outputs["z"]))


def test_converged_stops_early_with_two_closing_rounds(fake):
    run = _time(fake, [compiled("base", kernel(10.0)), compiled("cand", kernel(8.0))],
                repetitions=500, warmup=1, target_ci_pct=1.0)
    # Constant durations: converged as soon as MIN_ROUNDS rounds are in (round 5), then 2 more.
    assert run.stop_reason == "converged"
    assert run.rounds == timing.MIN_ROUNDS + timing.CLOSING_ROUNDS


def test_budget_stops_after_the_minimum_rounds_with_two_closing_rounds(fake):
    run = _time(fake, [compiled("base", kernel(10.0))], repetitions=500, warmup=0,
                time_budget_s=0.0)
    assert run.stop_reason == "budget"
    assert run.rounds == timing.MIN_ROUNDS + 1  # budget found at round index 4, then 4 and 5


def test_bad_arguments_are_refused(fake):
    with pytest.raises(ValueError, match="repetitions must be at least 1, found 0"):
        _time(fake, [compiled("base", kernel(1.0))], repetitions=0)
    with pytest.raises(ValueError, match="target_ci_pct must be a positive percentage, found 0"):
        _time(fake, [compiled("base", kernel(1.0))], target_ci_pct=0)
