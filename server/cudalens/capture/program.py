"""Run the user's command with the recorder injected, and collect what it left.

The command runs as given (an argument list, never through a shell), in the current
directory, with the environment of cudalens plus ``CUDA_INJECTION64_PATH`` (the recorder
library) and the ``CUDALENS_CAPTURE_*`` settings the recorder reads. Its stdout is the user's
terminal; its stderr is passed through line by line and its last ``STDERR_TAIL_LINES`` lines
are kept for the report of a failing program.
"""

from __future__ import annotations

import os
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


def run_program(command: Sequence[str], env: dict[str, str], out_dir: Path,
                echo=None) -> ProgramRun:
    """Run ``command`` with ``env`` and read the recorder's output from ``out_dir``. ``echo``
    receives each stderr line (default: written to this process's stderr). Raises
    ``ProgramNotRun`` when the command cannot start."""
    write = echo or (lambda line: (sys.stderr.write(line), sys.stderr.flush()))
    try:
        proc = subprocess.Popen(list(command), env=env, stderr=subprocess.PIPE, text=True,
                                errors="replace")
    except OSError as exc:
        raise ProgramNotRun(f"cannot run {command[0]!r}: {exc.strerror or exc}") from None
    tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)

    def pump() -> None:
        for line in proc.stderr:
            tail.append(line.rstrip("\n"))
            write(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    status = proc.wait()
    reader.join(timeout=5)
    return ProgramRun(status, tuple(tail), read_output(out_dir))
