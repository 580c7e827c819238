"""Run the user's command with the recorder injected, and collect what it left.

The command runs as given (an argument list, never through a shell), in the current
directory (or ``cwd``), with the environment of cudalens plus ``CUDA_INJECTION64_PATH``
(the recorder library) and the ``CUDALENS_CAPTURE_*`` settings the recorder reads. Its stdout
is the user's terminal; its stderr is passed through line by line and its last
``STDERR_TAIL_LINES`` lines are kept for the report of a failing program.

``cancel`` (a ``threading.Event``, the editor's cancel): the program then runs in a process
group of its own, without stdin and with its stdout discarded (no terminal); once set, the
whole group (the program and every child it started: a launcher script's python, a test
runner's workers) gets SIGTERM, then SIGKILL after ``KILL_GRACE_S`` seconds, and
``ProgramCancelled`` is raised: nothing it left is used.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from cudalens.capture.raw import RecorderOutput, read_output
from cudalens.errors import CudalensError

STDERR_TAIL_LINES = 20
KILL_GRACE_S = 3.0


class ProgramCancelled(CudalensError):
    """The run was cancelled; its process group was ended and nothing it left is used."""


class ProgramNotRun(CudalensError):
    """The command could not be started (not found, not executable)."""


@dataclass(frozen=True)
class ProgramRun:
    """``status``: the exit status (negative: killed by that signal); ``stderr_tail``: its
    last stderr lines; ``output``: the recorder's output."""

    status: int
    stderr_tail: tuple[str, ...]
    output: RecorderOutput


def recorder_env(library: Path, out_dir: Path, kernels: Sequence[str], launch: int,
                 max_bytes: Optional[int], base: Optional[dict] = None) -> dict[str, str]:
    """The environment the command runs in (module doc)."""
    env = dict(os.environ if base is None else base)
    env["CUDA_INJECTION64_PATH"] = str(library)
    env["CUDALENS_CAPTURE_DIR"] = str(out_dir)
    env["CUDALENS_CAPTURE_KERNELS"] = "\n".join(kernels)
    env["CUDALENS_CAPTURE_LAUNCH"] = str(launch)
    env["CUDALENS_CAPTURE_MAX_BYTES"] = str(max_bytes or 0)
    return env


def _end_group(proc: subprocess.Popen) -> None:
    """SIGTERM to ``proc``'s process group, SIGKILL after ``KILL_GRACE_S`` if it is still
    there (module doc)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            continue
        # the leader is gone; its children may not be: the group gets SIGKILL too
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return


def run_program(command: Sequence[str], env: dict[str, str], out_dir: Path,
                echo=None, *, cwd: Optional[Path] = None,
                cancel: Optional[threading.Event] = None) -> ProgramRun:
    """Run ``command`` with ``env`` (in ``cwd``, default the current directory) and read the
    recorder's output from ``out_dir``. ``echo`` receives each stderr line (default: written
    to this process's stderr). Raises ``ProgramNotRun`` when the command cannot start and
    ``ProgramCancelled`` when ``cancel`` was set before it ended (module doc)."""
    write = echo or (lambda line: (sys.stderr.write(line), sys.stderr.flush()))
    # in the editor (cancel given) there is no terminal: the server's stdin and stdout carry
    # the LSP messages, which the program must neither read nor write into
    quiet = subprocess.DEVNULL if cancel is not None else None
    try:
        proc = subprocess.Popen(list(command), env=env, stderr=subprocess.PIPE, text=True,
                                errors="replace", cwd=cwd, stdin=quiet, stdout=quiet,
                                start_new_session=cancel is not None)
    except OSError as exc:
        raise ProgramNotRun(f"cannot run {command[0]!r}: {exc.strerror or exc}") from None
    tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)

    def pump() -> None:
        for line in proc.stderr:
            tail.append(line.rstrip("\n"))
            write(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    if cancel is None:
        status = proc.wait()
    else:
        while True:
            try:
                status = proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                if cancel.is_set():
                    _end_group(proc)
                    reader.join(timeout=5)
                    raise ProgramCancelled(f"cancelled: {command[0]} and its child processes "
                                           f"were stopped; nothing was saved") from None
        if cancel.is_set():
            raise ProgramCancelled("cancelled; nothing was saved")
    reader.join(timeout=5)
    return ProgramRun(status, tuple(tail), read_output(out_dir))
