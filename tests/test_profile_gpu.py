"""Nsight Compute on a real GPU (marker gpu): ``gpu_runner.profile.profile_variant`` profiles
one launch of ``examples/saxpy.cu`` and the profile's fields are plausible for a memory-bound
kernel. Skipped, with the reason, where there is no GPU, no pycuda or no ``ncu``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpu_runner.ncu_csv import STALL_REASONS
from gpu_runner.profile import ProfileError, find_ncu, profile_variant

pytestmark = pytest.mark.gpu

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _sm_count() -> int:
    from gpu_runner.session import GpuSession, NoGpuError

    try:
        session = GpuSession(0)
    except NoGpuError as exc:
        pytest.skip(f"no GPU: {exc}")
    try:
        return session.device.get_attribute(session.drv.device_attribute.MULTIPROCESSOR_COUNT)
    finally:
        session.close()


def test_saxpy_profile_is_plausible():
    ncu = find_ncu()
    if ncu is None:
        pytest.skip("Nsight Compute (ncu) is not on PATH (nor in $CUDA_HOME/bin or "
                    "/usr/local/cuda/bin)")
    from cudalens.spec.resolve import build_problem, build_variant
    from cudalens.target import load_target

    sm_count = _sm_count()
    target = load_target(EXAMPLES / "saxpy.cu")
    problem = build_problem(target.spec, target.kernel)
    variant = build_variant("baseline", target.text, target.kernel.qualified_name, target.spec,
                            target.spec.launch, sm_count)
    try:
        p = profile_variant(problem, variant, ncu=ncu)
    except ProfileError as exc:
        if "ERR_NVGPUCTRPERM" in str(exc):
            pytest.skip(f"this user may not read the GPU's performance counters: {exc}")
        raise
    line = f"saxpy under {ncu}: {p.summary()}"
    print(line)
    log_dir = os.environ.get("CUDALENS_GPU_LOG_DIR")
    if log_dir:
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        (Path(log_dir) / "profile-saxpy.log").write_text(line + "\n", encoding="utf-8")
    assert p.kernel.startswith("saxpy"), p
    assert 0 < p.achieved_occupancy_pct <= 100, p
    # 2^25 floats in, out and in-out: far past L2, so DRAM carries the traffic
    assert 20 < p.dram_throughput_pct <= 100, p
    assert 1 <= len(p.stalls) <= 3, p
    assert all(s.reason.replace(" ", "_") in STALL_REASONS for s in p.stalls), p
    assert all(s.cycles_per_issue > 0 and 0 < s.share_pct <= 100 for s in p.stalls), p
    assert [s.cycles_per_issue for s in p.stalls] == \
        sorted((s.cycles_per_issue for s in p.stalls), reverse=True)
    assert sum(s.share_pct for s in p.stalls) <= 100.0 + 1e-6
