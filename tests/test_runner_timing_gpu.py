"""Honest timing on a real GPU (marker gpu): repetitions until the median's 95% confidence
interval is within 1% (or the budget ends, and the record says which), the persisting-L2 reset,
the NVML clock sample, and the roofline check on a real measurement. Skipped, with the reason,
where pycuda or a GPU is missing."""

from __future__ import annotations

import pytest

from gpu_runner.stats import median_ci_half_width_pct
from gpu_runner.timing import CLOSING_ROUNDS, TARGET_CI_PCT, time_variants, timing_of

pytestmark = pytest.mark.gpu


def test_timing_until_the_median_is_known_to_one_percent():
    import test_runner_gpu as t

    from gpu_runner.compiler import compile_variant
    from gpu_runner.device import device_info
    from gpu_runner.session import GpuSession, NoGpuError

    try:
        session = GpuSession(0)
    except NoGpuError as e:
        pytest.skip(str(e))
    try:
        with session.active():
            info = device_info(session)
            base = compile_variant(session, t.variant("saxpy.cu"))
            cand = compile_variant(session, t.variant("saxpy_gridstride.cu", block=128,
                                                      grid=2112, label="gs"))
            assert base.report.ok and cand.report.ok
            case = t.saxpy_problem().timed_case
            run = time_variants(session, case, 1, [base, cand], l2_bytes=info.l2_bytes,
                                repetitions=5000, warmup=5, time_budget_s=20.0,
                                target_ci_pct=TARGET_CI_PCT)
    finally:
        session.close()
    timings = {label: timing_of(label, s, case, info.copy_bandwidth_gbps, run=run,
                                l2_bytes=info.l2_bytes)
               for label, s in run.samples_us.items()}
    for tm in timings.values():
        print(f"\n{tm.variant}: median {tm.median_us:.3f} us, 95% CI [{tm.median_ci_low_us:.3f}, "
              f"{tm.median_ci_high_us:.3f}] (+-{tm.ci_half_width_pct:.2f}%), n {tm.samples}, "
              f"stop {tm.stop_reason}, SM {tm.sm_clock_mhz} MHz, reasons {tm.throttle_reasons} "
              f"({tm.clock_source}), persisting L2 {tm.persisting_l2}; {tm.roofline_note}",
              end="")
    assert run.stop_reason in ("converged", "budget")
    if run.stop_reason == "converged":
        assert run.rounds < 5000
        # Converged on the samples before the closing rounds.
        for label, s in run.samples_us.items():
            assert median_ci_half_width_pct(s[:-CLOSING_ROUNDS]) <= TARGET_CI_PCT, label
    assert run.persisting_l2 in ("reset (pycuda)", "reset (libcuda)"), run.persisting_l2
    for tm in timings.values():
        assert tm.stop_reason == run.stop_reason and tm.samples == run.rounds
        assert tm.median_ci_low_us <= tm.median_us <= tm.median_ci_high_us
        # A real saxpy is within what the bytes allow: not flagged.
        assert tm.roofline_floor_us > 0 and not tm.above_roofline, tm.roofline_note
        assert tm.median_us > tm.roofline_floor_us * 0.9
        if tm.clock_source == "nvml":
            assert tm.sm_clock_mhz > 100 and isinstance(tm.throttle_reasons, tuple)
        else:
            assert tm.clock_source.startswith("unknown: ") and tm.sm_clock_mhz is None
