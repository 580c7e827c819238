"""Build the capture recorder (``recorder.cpp``) once per recorder text and CUDA install.

The recorder is compiled with the user's nvcc (``cudalens.check.nvcc.find_nvcc``), which hands
the C++ file to the host compiler it is configured with, into a shared library linked against
that CUDA's libcupti (found in ``lib64`` or ``extras/CUPTI/lib64`` of the CUDA root, with an
rpath so the program need not have it on its library path). The driver API is looked up at run
time (``dlsym`` on ``libcuda.so.1``), so no driver stub is needed to build.

The library is cached as ``<cache>/recorder-<digest>.so``, the digest covering the source text,
the nvcc path and the CUDA root; ``<cache>`` is ``$CUDALENS_CACHE_DIR`` or
``~/.cache/cudalens``. A build writes to a temporary name and renames, so concurrent captures
never load a half-written library.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from cudalens.check.nvcc import find_nvcc
from cudalens.errors import CudalensError

RECORDER_SOURCE = Path(__file__).with_name("recorder.cpp")
BUILD_TIMEOUT_S = 300.0


class RecorderBuildError(CudalensError):
    """The recorder library could not be built (no CUPTI, or the compiler failed)."""


@dataclass(frozen=True)
class CudaInstall:
    """Where the CUDA toolkit nvcc belongs to keeps CUPTI's header and library."""

    nvcc: str
    root: Path
    cupti_include: Path
    cupti_lib: Path


def _roots(nvcc: str) -> list[Path]:
    seen: list[Path] = []
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            seen.append(Path(os.environ[env]))
    seen.append(Path(os.path.realpath(nvcc)).parent.parent)
    seen.append(Path("/usr/local/cuda"))
    out: list[Path] = []
    for p in seen:
        if p not in out:
            out.append(p)
    return out


def locate_cuda(nvcc: str = "nvcc") -> CudaInstall:
    """The CUDA install of ``nvcc`` (a name on PATH or a path) with CUPTI in it. Raises
    ``NvccNotFound`` without nvcc and ``RecorderBuildError`` when no CUDA root near it has
    ``include/cupti.h`` and ``libcupti.so`` (the places looked in are named)."""
    exe = find_nvcc(nvcc)
    looked: list[str] = []
    for root in _roots(exe):
        for inc, lib in ((root / "include", root / "lib64"),
                         (root / "extras/CUPTI/include", root / "extras/CUPTI/lib64")):
            if (inc / "cupti.h").is_file() and (lib / "libcupti.so").exists():
                return CudaInstall(exe, root, inc, lib)
            looked.append(str(inc))
    raise RecorderBuildError(
        f"CUPTI not found for {exe}: expected include/cupti.h and lib64/libcupti.so (or under "
        f"extras/CUPTI) in one of {', '.join(looked)}; install the CUDA toolkit's CUPTI or set "
        f"CUDA_HOME")


def cache_dir() -> Path:
    """``$CUDALENS_CACHE_DIR``, else ``~/.cache/cudalens``."""
    env = os.environ.get("CUDALENS_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "cudalens"


def build_command(cuda: CudaInstall, source: Path, output: Path) -> list[str]:
    """The nvcc command line that builds ``source`` into the shared library ``output``."""
    return [cuda.nvcc, "-shared", "-std=c++17", "-O2", "-Xcompiler", "-fPIC", "-cudart", "none",
            f"-I{cuda.cupti_include}", str(source), f"-L{cuda.cupti_lib}", "-lcupti",
            f"-Xlinker", f"-rpath={cuda.cupti_lib}", "-ldl", "-o", str(output)]


def recorder_library(nvcc: str = "nvcc", cache: Optional[Path] = None) -> Path:
    """The path of the built recorder library, building it on first use (module doc).

    Raises ``RecorderBuildError`` (with the compiler's output) when the build fails or times
    out, ``NvccNotFound`` without nvcc."""
    cuda = locate_cuda(nvcc)
    text = RECORDER_SOURCE.read_bytes()
    digest = hashlib.sha256(text + b"\0" + cuda.nvcc.encode() + b"\0"
                            + str(cuda.root).encode()).hexdigest()[:16]
    where = cache or cache_dir()
    lib = where / f"recorder-{digest}.so"
    if lib.is_file():
        return lib
    where.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="recorder-", suffix=".so.tmp", dir=where)
    os.close(fd)
    cmd = build_command(cuda, RECORDER_SOURCE, Path(tmp))
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.unlink(tmp)
        raise RecorderBuildError(f"building the capture recorder took over {BUILD_TIMEOUT_S:.0f} s "
                                 f"and was stopped: {' '.join(cmd)}") from None
    if done.returncode != 0:
        os.unlink(tmp)
        raise RecorderBuildError(f"building the capture recorder failed (exit {done.returncode}): "
                                 f"{' '.join(cmd)}\n{(done.stderr or done.stdout).strip()}")
    os.replace(tmp, lib)
    return lib
