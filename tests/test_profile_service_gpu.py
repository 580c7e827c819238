"""Profiling through the runner service on a real GPU (marker gpu): ``RunnerClient()`` starts
a local runner, and ``profile`` sends examples/saxpy.cu's baseline to ``POST /v1/profile``,
which runs Nsight Compute on the GPU's queue and returns the profile. Skipped, with the
reason, where there is no GPU (the client cannot start a usable runner) or where the runner
answers that it cannot profile (ncu missing, counters not permitted). Meant to take well
under a minute: one runner start (about 4 s on an H200) and one ncu run of one launch."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import cudalens.runner_client as rc
from cudalens.runner_client import RunnerClient, RunnerUnavailable
from profile_checks import assert_plausible_saxpy_profile

pytestmark = pytest.mark.gpu

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_saxpy_is_profiled_through_the_runner_service(monkeypatch):
    from cudalens.spec.resolve import build_problem, build_variant
    from cudalens.target import load_target

    monkeypatch.delenv(rc.ENV_URL, raising=False)  # this test starts its own local runner
    monkeypatch.delenv(rc.ENV_TOKEN, raising=False)
    started = time.monotonic()
    try:
        client = RunnerClient(start_timeout_s=60.0)
    except RunnerUnavailable as exc:
        pytest.skip(f"no GPU runner can be started here: {exc}")
    try:
        assert client.local is not None
        info = client.device_info()
        target = load_target(EXAMPLES / "saxpy.cu")
        problem = build_problem(target.spec, target.kernel)
        variant = build_variant("baseline", target.text, target.kernel.qualified_name,
                                target.spec, target.spec.launch, info.sm_count)
        ready = time.monotonic()
        answer = client.try_profile(problem, variant, timeout_s=90.0)
        done = time.monotonic()
    finally:
        client.close()
    if answer.profile is None:
        if answer.kind in ("ncu_missing", "no_permission"):
            pytest.skip(f"the runner cannot profile here ({answer.kind}): {answer.reason}")
        pytest.fail(f"no profile ({answer.kind}): {answer.reason}")
    p = answer.profile
    line = (f"saxpy through POST /v1/profile on {info.name}: {p.summary()} (runner start "
            f"{ready - started:.1f} s, profile {done - ready:.1f} s)")
    print(line)
    log_dir = os.environ.get("CUDALENS_GPU_LOG_DIR")
    if log_dir:
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        (Path(log_dir) / "profile-service-saxpy.log").write_text(line + "\n", encoding="utf-8")
    assert p.tool == "Nsight Compute"
    assert_plausible_saxpy_profile(p)
