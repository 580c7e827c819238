"""Nsight Compute on a real GPU (marker gpu): ``gpu_runner.profile.profile_variant`` profiles
one launch of ``examples/saxpy.cu`` and the profile's fields are plausible for a memory-bound
kernel. Skipped, with the reason, where there is no GPU, no pycuda or no ``ncu``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from profile_checks import assert_plausible_saxpy_profile
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
    assert_plausible_saxpy_profile(p)
