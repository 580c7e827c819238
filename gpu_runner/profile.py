"""A short Nsight Compute profile of one verified variant: achieved occupancy, DRAM throughput
and the main warp stall reasons (``ncu_csv.Profile``).

``profile_variant(problem, variant)`` writes the request to a temporary file and runs, in a
subprocess::

    ncu --csv --target-processes application-only --profile-from-start off \\
        --launch-count 1 --metrics <ncu_csv.METRICS> \\
        <python> -m gpu_runner.profile_launch <temporary request file>

Every argument is fixed here or made here (the ncu path found on this machine, this Python,
the temporary file's path): nothing from the request's text reaches the command line. The
launch script (``profile_launch``) profiles exactly one launch of the variant on the timed
case (``cuProfilerStart``/``cuProfilerStop`` around it). ncu replays that launch once per
group of metrics, so a profile takes seconds, not the kernel's time.

Profile only variants the runner has verified: a kernel that faults under ncu ends only the
subprocess, but its profile is worthless.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from gpu_runner.ncu_csv import METRICS, NcuParseError, Profile, parse_profile
from gpu_runner.problem import Problem, Variant, to_dict

NCU_FALLBACKS = ("/usr/local/cuda/bin/ncu",)
DEFAULT_TIMEOUT_S = 180.0
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # the folder holding gpu_runner/


# ``ProfileError.kind``: why no profile was taken, for callers that answer "not available".
NCU_MISSING = "ncu_missing"  # no ncu executable on this machine
NO_PERMISSION = "no_permission"  # ERR_NVGPUCTRPERM: this user may not read the GPU's counters
TIMEOUT = "timeout"  # ncu did not finish in time (its process group was killed)
VARIANT_FAILED = "variant_failed"  # the variant did not compile or launch under ncu
FAILED = "failed"  # anything else (ncu's error lines say what)
NO_PROFILE = "no_profile"  # ncu ran but printed no usable profile
KINDS = (NCU_MISSING, NO_PERMISSION, TIMEOUT, VARIANT_FAILED, FAILED, NO_PROFILE)

# ncu's error code when the driver refuses the performance counters to this user (Nsight
# Compute documentation, "ERR_NVGPUCTRPERM"; NVIDIA's fix: run as root or allow profiling for
# all users with the nvidia kernel module option NVreg_RestrictProfilingToAdminUsers=0).
_PERMISSION_CODE = "ERR_NVGPUCTRPERM"


class ProfileError(RuntimeError):
    """The profile could not be taken; the message says why (ncu's own error lines
    included), ``kind`` is one of ``KINDS``."""

    def __init__(self, message: str, kind: str = FAILED):
        super().__init__(message)
        self.kind = kind


def find_ncu() -> Optional[str]:
    """The ``ncu`` executable: on PATH, else under ``$CUDA_HOME/bin`` or /usr/local/cuda/bin;
    None when there is none."""
    found = shutil.which("ncu")
    if found:
        return found
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    for candidate in ([str(Path(home) / "bin" / "ncu")] if home else []) + list(NCU_FALLBACKS):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def ncu_command(ncu: str, request_file: str) -> list[str]:
    """The command line (see the module doc); ``request_file`` is the path this module made."""
    return [ncu, "--csv", "--target-processes", "application-only",
            "--profile-from-start", "off", "--launch-count", "1",
            "--metrics", ",".join(METRICS),
            sys.executable, "-m", "gpu_runner.profile_launch", request_file]


def _errors(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines()
             if ln.startswith("==ERROR==") or ln.startswith("==WARNING==")
             or ln.startswith("profile_launch:")]
    return "; ".join(lines[:6])


def profile_variant(problem: Problem, variant: Variant, *, device_index: int = 0,
                    timeout_s: float = DEFAULT_TIMEOUT_S,
                    ncu: Optional[str] = None) -> Profile:
    """Profiles one launch of ``variant`` on ``problem``'s timed case (first seed's inputs).

    Raises:
        ProfileError: ncu is missing, did not finish within ``timeout_s``, failed (its error
            lines and the launch script's are in the message), or printed no usable profile.
    """
    ncu = ncu or find_ncu()
    if ncu is None:
        raise ProfileError("Nsight Compute (ncu) was not found on PATH, under $CUDA_HOME/bin or "
                           "in /usr/local/cuda/bin", NCU_MISSING)
    request = {"problem": to_dict(problem), "variant": to_dict(variant),
               "device_index": int(device_index)}
    with tempfile.TemporaryDirectory(prefix="cudalens-profile-") as tmp:
        request_file = str(Path(tmp) / "request.json")
        Path(request_file).write_text(json.dumps(request), encoding="utf-8")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(_PACKAGE_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
        returncode, stdout, stderr = _run(ncu_command(ncu, request_file), env, tmp, timeout_s,
                                          variant.label, ncu)
    if returncode != 0:
        text = stdout + "\n" + stderr
        why = _errors(text) or stderr.strip()[-500:]
        kind = NO_PERMISSION if _PERMISSION_CODE in text else \
            VARIANT_FAILED if "profile_launch:" in text else FAILED
        raise ProfileError(f"ncu failed profiling {variant.label} (exit status "
                           f"{returncode}): {why or 'no message'}", kind)
    try:
        return parse_profile(stdout)
    except NcuParseError as exc:
        why = _errors(stdout + "\n" + stderr)
        kind = NO_PERMISSION if _PERMISSION_CODE in why else NO_PROFILE
        raise ProfileError(f"ncu printed no usable profile of {variant.label}: {exc}"
                           + (f" (ncu said: {why})" if why else ""), kind) from None


def _run(cmd: list[str], env: dict, cwd: str, timeout_s: float, label: str,
         ncu: str) -> tuple[int, str, str]:
    """Runs ``cmd`` in its own process group; on timeout the whole group (ncu and the
    profiled Python it started) is killed, so no profiled kernel is left on the GPU.
    (returncode, stdout, stderr); raises ``ProfileError`` (``TIMEOUT``, or ``FAILED`` when
    ncu cannot be started)."""
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=cwd, start_new_session=True)
    except OSError as exc:
        raise ProfileError(f"ncu ({ncu}) could not be started: {exc}") from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise ProfileError(f"ncu did not finish profiling {label} within {timeout_s:g} s",
                           TIMEOUT) from None
    return proc.returncode, stdout, stderr
