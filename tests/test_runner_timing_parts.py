"""The honest-timing pieces that need no GPU: the median's confidence interval and when the
timing loop stops, NVML clock samples, the persisting-L2 reset, the roofline check, and the
fields they add to ``Timing``."""

from __future__ import annotations

import ctypes
import math
import sys
from dataclasses import asdict

import numpy as np
import pytest

from gpu_runner.buffers import GuardDamage
from gpu_runner.l2flush import reset_persisting_l2
from gpu_runner.problem import Buffer, Case, Scalar
from gpu_runner.report import Timing
from gpu_runner.roofline import ROOFLINE_SLACK, check, roofline_floor_us, written_bytes
from gpu_runner.stats import median_ci, median_ci_half_width_pct
from gpu_runner.throttle import ClockProbe, ClockSample, LibNvml, reason_names
from gpu_runner.timing import (
    CLOSING_ROUNDS,
    SPOT_CHECKS,
    TimingRun,
    converged,
    divergence,
    spot_rounds,
    stop_reason,
    timing_of,
)
from gpu_runner.verdicts import RunResult

# -- the median's confidence interval ---------------------------------------------------------


def test_median_ci_uses_the_order_statistics_of_conover():
    # n = 100 at 95%: ranks 50 -/+ 1.96 * 10 / 2 -> the 40th and the 61st value.
    assert median_ci(list(range(1, 101))) == (40.0, 61.0)
    # Order does not matter; n = 25: ranks round(12.5 - 4.9) = 8 and round(1 + 12.5 + 4.9) = 18.
    values = list(range(25, 0, -1))
    assert median_ci(values) == (8.0, 18.0)
    # 99%: n = 100, ranks round(50 - 12.88) = 37 and round(63.88) = 64.
    assert median_ci(list(range(1, 101)), confidence=0.99) == (37.0, 64.0)


def test_median_ci_of_few_samples_is_the_whole_range_and_bad_input_is_refused():
    assert median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)
    assert median_ci([7.0]) == (7.0, 7.0)
    with pytest.raises(ValueError, match="confidence must be one of 0.9, 0.95, 0.99, found 0.8"):
        median_ci([1.0, 2.0], confidence=0.8)
    with pytest.raises(ValueError, match="expected a non-empty sequence"):
        median_ci([])


def test_median_ci_covers_the_true_median_about_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    true_median = np.log(2.0)  # exponential(1): a skewed, kernel-time-like distribution
    hits = 0
    for _ in range(400):
        low, high = median_ci(rng.exponential(1.0, size=60))
        hits += low <= true_median <= high
    assert 0.92 <= hits / 400 <= 0.99


def test_half_width_pct():
    # 1..100: median 50.5, interval (40, 61): half width 10.5 = 20.79% of 50.5.
    assert median_ci_half_width_pct(list(range(1, 101))) == pytest.approx(10.5 / 50.5 * 100)
    assert median_ci_half_width_pct([5.0] * 20) == 0.0
    assert median_ci_half_width_pct([0.0] * 20) == 0.0
    assert median_ci_half_width_pct([-1.0, 0.0, 1.0]) == math.inf


# -- when the timing loop stops ---------------------------------------------------------------


def test_stop_reason_order_and_minimum_rounds():
    # Converged counts only after min_rounds rounds are done (round index >= min_rounds).
    assert stop_reason(4, 50, 5, False, True) == ""
    assert stop_reason(5, 50, 5, False, True) == "converged"
    assert stop_reason(5, 50, 5, True, True) == "converged"
    # The budget ends the loop from the min_rounds-th round on, not before.
    assert stop_reason(3, 50, 5, True, False) == ""
    assert stop_reason(4, 50, 5, True, False) == "budget"
    # The closing rounds of a capped loop are its last CLOSING_ROUNDS (2) rounds.
    assert CLOSING_ROUNDS == 2
    assert stop_reason(47, 50, 5, False, False) == ""
    assert stop_reason(48, 50, 5, False, False) == "repetitions"
    assert stop_reason(10, 50, 5, False, False) == ""
    assert stop_reason(0, 1, 1, False, False) == "repetitions"


def test_spot_rounds_are_seeded_distinct_and_in_range():
    a = spot_rounds(1, 50)
    assert a == spot_rounds(1, 50) and len(a) == SPOT_CHECKS
    assert all(0 <= r < 50 for r in a)
    assert spot_rounds(2, 50) != a
    assert spot_rounds(1, 3) == frozenset({0, 1, 2})


def test_divergence_ranks_the_launch_to_judge():
    inputs = {"x": np.arange(8, dtype=np.float32)}
    ref = RunResult(outputs={"z": np.ones(8, dtype=np.float32)})
    same = RunResult(outputs={"z": np.ones(8, dtype=np.float32)}, inputs_after=dict(inputs))
    assert divergence(same, ref, inputs) == 0
    poisoned = np.ones(8, dtype=np.float32)
    poisoned[3:] = np.nan
    skipped = RunResult(outputs={"z": poisoned}, inputs_after=dict(inputs))
    assert divergence(skipped, ref, inputs) == 5
    touched = np.arange(8, dtype=np.float32)
    touched[0] = -1
    changed_input = RunResult(outputs={"z": np.ones(8, dtype=np.float32)},
                              inputs_after={"x": touched})
    assert divergence(changed_input, ref, inputs) == 1
    hit = RunResult(outputs={"z": np.ones(8, dtype=np.float32)}, inputs_after=dict(inputs),
                    guard=GuardDamage("z", "after", 8, 4))
    assert divergence(hit, ref, inputs) == sys.maxsize


def test_converged_needs_every_variant_tight():
    tight = [100.0 + 0.01 * i for i in range(40)]
    loose = [100.0 + 3.0 * i for i in range(40)]
    assert converged({"base": tight, "cand": tight}, 1.0)
    assert not converged({"base": tight, "cand": loose}, 1.0)
    assert not converged({"base": tight, "cand": []}, 1.0)


# -- NVML ------------------------------------------------------------------------------------


def test_reason_names_decode_the_nvml_bits():
    assert reason_names(0) == ()
    assert reason_names(0x1) == ("gpu_idle",)
    assert reason_names(0x4 | 0x40) == ("sw_power_cap", "hw_thermal_slowdown")
    assert reason_names(0x100 | 0x2000) == ("display_clock_setting", "bit_0x2000")
    with pytest.raises(ValueError, match="non-negative NVML reason mask, found -1"):
        reason_names(-1)


class FakeNvml:
    NVML_CLOCK_SM = 1

    def __init__(self, *, init_error=None, handle_error=None, mask=0x4, old_name=False):
        self.init_error, self.handle_error, self.mask = init_error, handle_error, mask
        self.calls = []
        if old_name:
            self.nvmlDeviceGetCurrentClocksThrottleReasons = self._reasons
        else:
            self.nvmlDeviceGetCurrentClocksEventReasons = self._reasons

    def nvmlInit(self):
        self.calls.append("init")
        if self.init_error:
            raise RuntimeError(self.init_error)

    def nvmlShutdown(self):
        self.calls.append("shutdown")

    def nvmlDeviceGetHandleByPciBusId(self, bus):
        self.calls.append(("handle", bus))
        if self.handle_error:
            raise RuntimeError(self.handle_error)
        return "H"

    def nvmlDeviceGetClockInfo(self, handle, which):
        assert (handle, which) == ("H", 1)
        return 1980

    def _reasons(self, handle):
        assert handle == "H"
        return self.mask


def test_clock_probe_reads_clock_and_reasons_and_shuts_nvml_down():
    nvml = FakeNvml(mask=0x4 | 0x20)
    probe = ClockProbe("0000:19:00.0", nvml=nvml)
    s = probe.sample()
    probe.close()
    assert s == ClockSample(1980, ("sw_power_cap", "sw_thermal_slowdown"), "nvml")
    assert s.throttled is True
    assert nvml.calls == ["init", ("handle", "0000:19:00.0"), "shutdown"]
    old = ClockProbe("b", nvml=FakeNvml(mask=0x1, old_name=True)).sample()
    assert old.reasons == ("gpu_idle",) and old.throttled is False


def test_clock_probe_without_nvml_records_unknown_and_why():
    s = ClockProbe("b", nvml=FakeNvml(init_error="NVML Shared Library Not Found")).sample()
    assert (s.sm_clock_mhz, s.reasons, s.throttled) == (None, None, None)
    assert s.source == "unknown: NVML did not initialise (NVML Shared Library Not Found)"
    nvml = FakeNvml(handle_error="Not Found")
    probe = ClockProbe("0000:01:00.0", nvml=nvml)
    s = probe.sample()
    probe.close()
    assert s.source == ("unknown: NVML does not see the device at PCI bus id 0000:01:00.0 "
                        "(Not Found)")
    assert nvml.calls[-1] == "shutdown"


class FakeNvmlLib:
    """The NVML C library's calls as ctypes would make them: pointers to fill, codes back."""

    def __init__(self, init_code=0, mask=0x40, old_name=False):
        self.init_code, self.mask, self.bus = init_code, mask, None
        # A plain function, as ctypes gives: LibNvml sets its restype.
        self.nvmlErrorString = lambda code: b"Driver Not Loaded" if code.value == 9 else b"?"
        if old_name:
            self.nvmlDeviceGetCurrentClocksThrottleReasons = self._reasons
        else:
            self.nvmlDeviceGetCurrentClocksEventReasons = self._reasons

    def nvmlInit_v2(self):
        return self.init_code

    def nvmlShutdown(self):
        return 0

    def nvmlDeviceGetHandleByPciBusId_v2(self, bus, handle_ptr):
        self.bus = bus.value
        handle_ptr.contents.value = 0x1234
        return 0

    def nvmlDeviceGetClockInfo(self, handle, clock, mhz_ptr):
        assert (handle.value, clock.value) == (0x1234, 1)
        mhz_ptr.contents.value = 1980
        return 0

    def _reasons(self, handle, mask_ptr):
        mask_ptr.contents.value = self.mask
        return 0


def test_clock_probe_through_the_nvml_c_library():
    lib = FakeNvmlLib(mask=0x40 | 0x1)
    probe = ClockProbe("0000:19:00.0", nvml=LibNvml(lib))
    assert probe.sample() == ClockSample(1980, ("gpu_idle", "hw_thermal_slowdown"), "nvml")
    probe.close()
    assert lib.bus == b"0000:19:00.0"
    old = ClockProbe("b", nvml=LibNvml(FakeNvmlLib(mask=0, old_name=True))).sample()
    assert old == ClockSample(1980, (), "nvml")
    failed = ClockProbe("b", nvml=LibNvml(FakeNvmlLib(init_code=9))).sample()
    assert failed.source == "unknown: NVML did not initialise (nvmlInit: Driver Not Loaded)"


def test_no_nvml_library_is_an_oserror_naming_what_was_tried(monkeypatch):
    from gpu_runner import throttle
    monkeypatch.setattr(throttle, "NVML_LIBRARIES", ("libcudalens-no-such-nvml.so",))
    with pytest.raises(OSError, match=r"the NVML library did not load \(libcudalens-no-such-nvml"):
        LibNvml()


# -- persisting L2 reset -----------------------------------------------------------------------


class FakeLib:
    def __init__(self, code=0, entry=True):
        self.code, self.called = code, 0
        if entry:
            self.cuCtxResetPersistingL2Cache = self._reset

    def _reset(self):
        self.called += 1
        return self.code

    def cuGetErrorName(self, code, out):
        assert code.value == 201
        ctypes.cast(out, ctypes.POINTER(ctypes.c_char_p))[0] = b"CUDA_ERROR_INVALID_CONTEXT"
        return 0


def _fn(lib):
    # A bound method takes no attribute assignment; wrap it in a plain function object.
    def reset():
        return lib._reset()
    return reset


def test_persisting_l2_reset_through_libcuda():
    lib = FakeLib()
    lib.cuCtxResetPersistingL2Cache = _fn(lib)
    assert reset_persisting_l2(None, load=lambda: lib) == "reset (libcuda)"
    assert lib.called == 1


def test_persisting_l2_reset_prefers_pycuda_when_it_exposes_the_call():
    seen = []

    class Ctx:
        @staticmethod
        def reset_persisting_l2_cache():
            seen.append(1)

    class Drv:
        Context = Ctx

    assert reset_persisting_l2(Drv, load=lambda: pytest.fail("libcuda not needed")) == \
        "reset (pycuda)"
    assert seen == [1]


def test_persisting_l2_reset_failures_are_recorded_not_raised():
    lib = FakeLib(code=201)
    lib.cuCtxResetPersistingL2Cache = _fn(lib)
    assert reset_persisting_l2(None, load=lambda: lib) == \
        "not reset: cuCtxResetPersistingL2Cache returned CUDA_ERROR_INVALID_CONTEXT"
    assert reset_persisting_l2(None, load=lambda: FakeLib(entry=False)) == \
        "not reset: this CUDA driver has no cuCtxResetPersistingL2Cache"

    def no_lib():
        raise OSError("the CUDA driver library did not load (libcuda.so.1: not found)")
    assert reset_persisting_l2(None, load=no_lib) == \
        "not reset: the CUDA driver library did not load (libcuda.so.1: not found)"

    class Ctx:
        @staticmethod
        def reset_persisting_l2_cache():
            raise RuntimeError("cuCtxResetPersistingL2Cache failed: not supported")

    class Drv:
        Context = Ctx
    lib = FakeLib()
    lib.cuCtxResetPersistingL2Cache = _fn(lib)
    assert reset_persisting_l2(Drv, load=lambda: lib) == "reset (libcuda)"


# -- roofline ---------------------------------------------------------------------------------

N = 1 << 22


def saxpy_case(n=N, flops=True) -> Case:
    return Case("nominal", (Scalar("n", "int32", n), Scalar("a", "float32", 2.5),
                            Buffer("x", "float32", n, "in"), Buffer("y", "float32", n, "in"),
                            Buffer("z", "float32", n, "out")),
                bytes_moved=12 * n, flops=2 * n if flops else 0)


def test_roofline_floor_counts_unavoidable_bytes():
    case = saxpy_case()
    assert written_bytes(case) == 4 * N
    # 4 TB/s = 4e6 bytes/us. All of z may stay in a 60 MB L2: 8N bytes must move.
    assert roofline_floor_us(case, 4000.0) == pytest.approx(8 * N / 4e6)
    assert roofline_floor_us(case, 4000.0, l2_bytes=60_000_000) == pytest.approx(8 * N / 4e6)
    # A 4 MiB L2 absorbs only 4 MiB of z's 16 MiB.
    assert roofline_floor_us(case, 4000.0, l2_bytes=4 << 20) == \
        pytest.approx((12 * N - (4 << 20)) / 4e6)
    # FLOPs at a (given) peak raise the floor when they dominate: 2N flops at 1 GFLOP/s.
    assert roofline_floor_us(case, 4000.0, peak_gflops=1.0) == pytest.approx(2 * N / 1e3)
    assert roofline_floor_us(saxpy_case(flops=False), 0.0, peak_gflops=1.0) == 0.0
    with pytest.raises(ValueError, match="non-negative bandwidth"):
        roofline_floor_us(case, -1.0)


def test_roofline_check_flags_a_time_below_the_floor():
    case = saxpy_case()
    floor = 8 * N / 4e6  # 8.39 us
    ok = check(11.0, case, 4000.0)
    assert (ok.above, ok.floor_us) == (False, pytest.approx(floor))
    assert ok.note.startswith("within the roofline: floor 8.39 us, median 11 us")
    edge = check(ROOFLINE_SLACK * floor * 1.001, case, 4000.0)
    assert not edge.above
    bad = check(2.0, case, 4000.0)
    assert bad.above
    assert bad.note.startswith("median 2 us is below 0.9 x the roofline floor 8.39 us")
    assert bad.note.endswith("so it is not a speedup")
    none = check(2.0, Case("c", ()), 4000.0)
    assert (none.above, none.floor_us) == (False, 0.0) and none.note.startswith("no roofline")


# -- the fields Timing gains -------------------------------------------------------------------


def test_timing_of_fills_ci_roofline_and_the_run_record():
    case = saxpy_case()
    samples = [11.0 + 0.01 * i for i in range(50)]
    run = TimingRun(seed=1, inputs={}, stop_reason="converged",
                    clock=ClockSample(1980, ("sw_power_cap",), "nvml"),
                    persisting_l2="reset (libcuda)")
    t = timing_of("cand", samples, case, 4000.0, run=run, l2_bytes=60_000_000)
    low, high = median_ci(samples)
    assert (t.median_ci_low_us, t.median_ci_high_us) == (low, high)
    assert t.ci_half_width_pct == pytest.approx((high - low) / 2 / t.median_us * 100)
    assert (t.stop_reason, t.sm_clock_mhz, t.throttle_reasons, t.clock_source) == \
        ("converged", 1980, ("sw_power_cap",), "nvml")
    assert t.persisting_l2 == "reset (libcuda)"
    assert t.roofline_floor_us == pytest.approx(8 * N / 4e6) and not t.above_roofline
    fast = timing_of("cheat", [1.0] * 10, case, 4000.0)
    assert fast.above_roofline and "not a speedup" in fast.roofline_note
    # Without a run, the clock is recorded as unknown rather than guessed.
    assert (fast.sm_clock_mhz, fast.throttle_reasons, fast.stop_reason) == (None, None, "")
    assert fast.clock_source == "unknown: not sampled"


def test_old_timing_callers_and_json_still_work():
    t = Timing(variant="v", median_us=10.0, q1_us=9.0, q3_us=11.0, min_us=8.0, samples=5,
               achieved_gbps=1.0, percent_of_copy=1.0)
    assert (t.above_roofline, t.sm_clock_mhz, t.stop_reason) == (False, None, "")
    pytest.importorskip("pydantic")
    from gpu_runner.service.schema import decode
    full = timing_of("cand", [11.0] * 8, saxpy_case(), 4000.0,
                     run=TimingRun(seed=1, inputs={}, stop_reason="budget",
                                   clock=ClockSample(1755, (), "nvml")))
    back = decode(Timing, asdict(full))
    assert back == full and back.throttle_reasons == ()
    legacy = {k: v for k, v in asdict(t).items()
              if k in ("variant", "median_us", "q1_us", "q3_us", "min_us", "samples",
                       "achieved_gbps", "percent_of_copy")}
    assert decode(Timing, legacy) == t
