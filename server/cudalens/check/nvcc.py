"""Find and run nvcc for a compile check (no GPU needed: nvcc only compiles).

nvcc runs in its own session (process group), and a timeout, a shutdown (``stop_all``) or an
interrupt ends the whole group: nvcc's children (cicc, ptxas) do not die with nvcc, and a
killed nvcc used to leave cicc at full CPU for minutes.

The command compiles one file to a cubin for one architecture with ptxas's resource
report (``-Xptxas -v``) and keeps the generated PTX (``--keep``) in a private directory so
ptxas errors can be traced back to source lines. It is always run as an argument list,
never through a shell.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional

from cudalens.errors import CudalensError


class CheckError(CudalensError):
    """A compile check could not be run (as opposed to: the code did not compile)."""


class NvccNotFound(CheckError):
    """No nvcc executable where one was asked for."""


class NvccTimeout(CheckError):
    """nvcc ran longer than the allowed time and was stopped."""


# Options that would change what nvcc produces or where: the check decides those itself.
_FORBIDDEN = ("-o", "--output-file", "-c", "--compile", "-cubin", "--cubin", "-ptx", "--ptx",
              "-fatbin", "--fatbin", "-E", "--preprocess", "-M", "-MM", "-MD", "-MMD",
              "-run", "--run", "-lib", "--lib", "-link", "--link", "-dlink", "--device-link",
              "--keep", "-keep", "--keep-dir", "-keep-dir", "-x", "--x", "-odir",
              "--output-directory", "-optix-ir", "--optix-ir", "-lto", "-dryrun", "--dryrun")
_ARCH_OPTIONS = ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code",
                 "--gpu-code")


def find_nvcc(nvcc: str = "nvcc") -> str:
    """Absolute path of the nvcc to run.

    ``nvcc`` is a path (contains a separator: used as is) or a program name looked up on
    PATH; for the default name ``nvcc`` also ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin`` and
    ``/usr/local/cuda/bin`` are tried. Raises NvccNotFound saying what was looked for and
    what is needed.
    """
    looked: list[str] = []
    if os.sep in nvcc or (os.altsep and os.altsep in nvcc):
        if os.path.isfile(nvcc) and os.access(nvcc, os.X_OK):
            return os.path.abspath(nvcc)
        looked.append(nvcc)
    else:
        found = shutil.which(nvcc)
        if found:
            return found
        looked.append(f"{nvcc!r} on PATH")
        if nvcc == "nvcc":
            for var in ("CUDA_HOME", "CUDA_PATH"):
                root = os.environ.get(var)
                if root:
                    candidate = os.path.join(root, "bin", "nvcc")
                    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                        return candidate
                    looked.append(f"${var}/bin/nvcc ({candidate})")
            default = "/usr/local/cuda/bin/nvcc"
            if os.path.isfile(default) and os.access(default, os.X_OK):
                return default
            looked.append(default)
    raise NvccNotFound(
        f"nvcc not found (looked for {', '.join(looked)}): the compile check needs the CUDA "
        "toolkit's nvcc; install the CUDA toolkit and put nvcc on PATH or set CUDA_HOME so "
        "that $CUDA_HOME/bin/nvcc exists")


def check_options(options: Sequence[str]) -> None:
    """Raise ValueError for an option the check must control itself (``-o``, ``-c``, ...)."""
    for opt in options:
        name = opt.split("=", 1)[0]
        if name in _FORBIDDEN:
            raise ValueError(f"option {opt!r} cannot be used with the compile check: it sets the "
                             "output kind or location, which the check chooses (a cubin in a "
                             "temporary directory)")


def sets_arch(options: Sequence[str]) -> bool:
    """Whether ``options`` already choose the target architecture."""
    return any(opt.split("=", 1)[0] in _ARCH_OPTIONS for opt in options)


def build_command(nvcc: str, source: str, output: str, keep_dir: str, *, arch: str,
                  options: Sequence[str] = (), include_dirs: Sequence[str] = (),
                  lineinfo: bool = True) -> list[str]:
    """The nvcc argument list: ``nvcc -cubin -x cu -arch=ARCH -Xptxas -v [-lineinfo]
    --keep --keep-dir DIR [-I DIR...] OPTIONS -o OUTPUT SOURCE``.

    ``-arch`` is left out when ``options`` choose the architecture themselves.
    """
    cmd = [nvcc, "-cubin", "-x", "cu"]
    if not sets_arch(options):
        cmd.append(f"-arch={arch}")
    cmd += ["-Xptxas", "-v"]
    if lineinfo:
        cmd.append("-lineinfo")
    cmd += ["--keep", "--keep-dir", keep_dir]
    for d in include_dirs:
        cmd += ["-I", d]
    cmd += list(options)
    cmd += ["-o", output, source]
    return cmd


@dataclass(frozen=True)
class NvccRun:
    returncode: int
    output: str  # stdout and stderr interleaved as printed
    duration: float  # wall-clock seconds


class NvccStopped(CheckError):
    """nvcc was stopped before it finished: its result is no longer wanted (``stop_all``,
    ``stop_tagged``)."""


# Seconds to wait for a killed nvcc's pipes to close and for it to be reaped.
_REAP_TIMEOUT_S = 10.0


class _Running:
    """The nvcc processes started by ``run_nvcc`` that have not finished, each with the tag
    its thread had (``tagged``), so that ``stop_all`` and ``stop_tagged`` can end them (from
    another thread: the language server's shutdown, or an edit that supersedes a check)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: dict[subprocess.Popen, Optional[str]] = {}
        self._stopped: set[subprocess.Popen] = set()

    def add(self, proc: subprocess.Popen, tag: Optional[str]) -> None:
        with self._lock:
            self._procs[proc] = tag

    def remove(self, proc: subprocess.Popen) -> bool:
        """Forgets ``proc``; whether ``stop_all`` stopped it."""
        with self._lock:
            self._procs.pop(proc, None)
            stopped = proc in self._stopped
            self._stopped.discard(proc)
            return stopped

    def stop(self, tag: Optional[str] = None) -> int:
        """Kills the groups of the processes tagged ``tag`` (every one when None)."""
        with self._lock:
            procs = [p for p, t in self._procs.items() if tag is None or t == tag]
            self._stopped.update(procs)
        for proc in procs:
            kill_group(proc)
        return len(procs)


_RUNNING = _Running()
_TAG = threading.local()


@contextmanager
def tagged(tag: str) -> Iterator[None]:
    """Within this block, nvcc runs started by this thread carry ``tag`` (for example the
    document a check is for), so that ``stop_tagged(tag)`` ends just those."""
    previous = getattr(_TAG, "value", None)
    _TAG.value = tag
    try:
        yield
    finally:
        _TAG.value = previous


def stop_tagged(tag: str) -> int:
    """Ends the running nvcc processes tagged ``tag`` (``tagged``) with their process groups;
    each such ``run_nvcc`` raises NvccStopped. Returns how many were ended."""
    return _RUNNING.stop(tag)


def stop_all() -> int:
    """Ends every nvcc that ``run_nvcc`` is running now, with its whole process group (cicc,
    ptxas, ...); each such ``run_nvcc`` raises NvccStopped. Returns how many were ended.
    Safe from any thread."""
    return _RUNNING.stop()


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to ``proc``'s process group (``run_nvcc`` starts nvcc as the leader of its own
    session, so the group is nvcc and every process it started: killing nvcc alone leaves
    cicc or ptxas running). A group that is already gone is not an error."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_nvcc(command: list[str], *, timeout: float, cwd: str | None = None,
             temp_dir: str | None = None) -> NvccRun:
    """Run ``command`` (no shell) in a new session (its own process group); raise NvccTimeout
    after ``timeout`` seconds, NvccStopped when ``stop_all`` ends it, and NvccNotFound when
    the executable cannot be started. On a timeout, ``stop_all``, or an exception in the
    caller's thread while waiting (KeyboardInterrupt), the whole group is killed and reaped
    before this returns: no compiler process outlives the call. ``temp_dir``: nvcc's
    ``TMPDIR`` (its front end writes intermediate files there even with ``--keep-dir``, and
    leaves some behind when the compile fails); default the caller's.
    """
    start = time.perf_counter()
    env = None if temp_dir is None else {**os.environ, "TMPDIR": temp_dir}
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=cwd, env=env,
                                start_new_session=True)
    except OSError as exc:
        raise NvccNotFound(f"cannot run nvcc at {command[0]}: {exc}; the compile check needs "
                           "the CUDA toolkit's nvcc on PATH or in $CUDA_HOME/bin") from exc
    _RUNNING.add(proc, getattr(_TAG, "value", None))
    stopped = False
    try:
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            _end(proc)
            raise NvccTimeout(f"nvcc did not finish within {timeout:g} s compiling "
                              f"{command[-1]} (command: {' '.join(command)}); it was stopped "
                              "with every process it started") from exc
        except BaseException:
            _end(proc)
            raise
    finally:
        stopped = _RUNNING.remove(proc)
    if stopped:
        _end(proc)
        raise NvccStopped(f"nvcc was stopped while compiling {command[-1]}: the check was "
                          "ended (superseded by an edit, or the server is shutting down)")
    return NvccRun(proc.returncode, output.decode("utf-8", "replace"),
                   time.perf_counter() - start)


def _end(proc: subprocess.Popen) -> None:
    """Kills ``proc``'s group and reaps ``proc`` (its pipes close when the group is gone)."""
    kill_group(proc)
    try:
        proc.communicate(timeout=_REAP_TIMEOUT_S)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        proc.kill()
        proc.wait()
