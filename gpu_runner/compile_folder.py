"""Compiling a request's source and its sent files with plain nvcc in a fresh private folder.

The request's ``files`` (relative path -> text, already checked by
``gpu_runner.includes.check_file_names``) are written as regular files under a new
``mkdtemp`` folder next to the source (``kernel.cu``, or the request's ``source_path``: the
kernel file's path in its project, its headers named from the same root), and nvcc runs there
(its working directory), so the request's relative ``-I`` options (``-Iinclude``) name folders of
that private folder and nothing else. The command is ``nvcc --cubin -arch=sm_XY OPTIONS -o
kernel.cubin kernel.cu``: the cubin pycuda's compile would produce, without pycuda (no GPU needed
to build it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from gpu_runner.compile_log import guard_log, runner_options, toolkit_include_dirs

MAIN = "kernel.cu"
OUTPUT = "kernel.cubin"


@dataclass(frozen=True)
class FolderCompile:
    """What one compile gave: ``cubin`` (None when nvcc failed), nvcc's ``log`` (stdout and
    stderr) and its ``returncode``."""

    cubin: Optional[bytes]
    log: str
    returncode: int


def write_request_files(folder: str, source: str, files: Mapping[str, str],
                        source_path: str = MAIN) -> str:
    """Write ``source`` as ``folder/SOURCE_PATH`` and each of ``files`` at its relative path
    (parent folders made), as new regular files (an existing name raises FileExistsError);
    the path of the source. The names are checked already (``gpu_runner.compiler``)."""
    main = os.path.join(folder, *source_path.split("/"))
    for rel, text in ((source_path, source), *sorted(files.items())):
        path = os.path.join(folder, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "x", encoding="utf-8", errors="surrogatepass", newline="") as f:
            f.write(text)
    return main


def nvcc_command(nvcc: str, arch: str, options: Sequence[str], source_path: str = MAIN
                 ) -> list[str]:
    """The argument list run in the folder (no shell)."""
    return [nvcc, "--cubin", f"-arch={arch}", *options, "-o", OUTPUT, source_path]


def compile_in_folder(source: str, files: Mapping[str, str], options: Sequence[str], *,
                      arch: str, nvcc: str = "nvcc", timeout: float = 600,
                      source_path: str = MAIN) -> FolderCompile:
    """Compile ``source`` with ``files`` beside it in a fresh folder (removed afterwards).

    arch: ``sm_XY``. options: nvcc options, already allowed by
    ``gpu_runner.compiler.check_options``. Raises FileNotFoundError/OSError when nvcc cannot
    be started and subprocess.TimeoutExpired after ``timeout`` seconds; a failed compile is a
    ``FolderCompile`` with ``cubin`` None. source_path: where the source is written (a
    relative path ``check_request`` accepted). nvcc runs with
    ``compile_log.runner_options(options)`` and the log is ``compile_log.guard_log``'s.
    """
    folder = tempfile.mkdtemp(prefix="gpu-runner-compile-")
    try:
        write_request_files(folder, source, files, source_path)
        proc = subprocess.run(nvcc_command(nvcc, arch, runner_options(options), source_path),
                              cwd=folder,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout, check=False,
                              env={**os.environ, "TMPDIR": folder})
        log = guard_log(proc.stdout.decode("utf-8", "replace").strip(),
                        toolkit_include_dirs(nvcc))
        cubin = None
        if proc.returncode == 0:
            with open(os.path.join(folder, OUTPUT), "rb") as f:
                cubin = f.read()
        return FolderCompile(cubin, log, proc.returncode)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
