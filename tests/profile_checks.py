"""What a plausible Nsight Compute profile of examples/saxpy.cu looks like (shared by the GPU
tests that profile it directly and through the runner service)."""

from __future__ import annotations

from gpu_runner.ncu_csv import STALL_REASONS


def assert_plausible_saxpy_profile(p) -> None:
    """``p``: a ``gpu_runner.profile`` profile of saxpy on 2^25 floats (x, y far past L2, so
    DRAM carries the traffic). Raises AssertionError naming the profile otherwise."""
    assert p.kernel.startswith("saxpy"), p
    assert 0 < p.achieved_occupancy_pct <= 100, p
    assert 20 < p.dram_throughput_pct <= 100, p
    assert 1 <= len(p.stalls) <= 3, p
    assert all(s.reason.replace(" ", "_") in STALL_REASONS for s in p.stalls), p
    assert all(s.cycles_per_issue > 0 and 0 < s.share_pct <= 100 for s in p.stalls), p
    assert [s.cycles_per_issue for s in p.stalls] == \
        sorted((s.cycles_per_issue for s in p.stalls), reverse=True)
    assert sum(s.share_pct for s in p.stalls) <= 100.0 + 1e-6
