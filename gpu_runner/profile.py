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


class ProfileError(RuntimeError):
    """The profile could not be taken; the message says why (ncu's own error lines
    included)."""


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
                           "in /usr/local/cuda/bin")
    request = {"problem": to_dict(problem), "variant": to_dict(variant),
               "device_index": int(device_index)}
    with tempfile.TemporaryDirectory(prefix="cudalens-profile-") as tmp:
        request_file = str(Path(tmp) / "request.json")
        Path(request_file).write_text(json.dumps(request), encoding="utf-8")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(_PACKAGE_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
        try:
            done = subprocess.run(ncu_command(ncu, request_file), capture_output=True,
                                  text=True, timeout=timeout_s, env=env, cwd=tmp, check=False)
        except subprocess.TimeoutExpired:
            raise ProfileError(f"ncu did not finish profiling {variant.label} within "
                               f"{timeout_s:g} s") from None
        except OSError as exc:
            raise ProfileError(f"ncu ({ncu}) could not be started: {exc}") from None
    if done.returncode != 0:
        why = _errors(done.stdout + "\n" + done.stderr) or done.stderr.strip()[-500:]
        raise ProfileError(f"ncu failed profiling {variant.label} (exit status "
                           f"{done.returncode}): {why or 'no message'}")
    try:
        return parse_profile(done.stdout)
    except NcuParseError as exc:
        why = _errors(done.stdout + "\n" + done.stderr)
        raise ProfileError(f"ncu printed no usable profile of {variant.label}: {exc}"
                           + (f" (ncu said: {why})" if why else "")) from None
