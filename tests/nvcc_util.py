"""Compiling CUDA source text with the real nvcc in tests (no GPU needed).

``needs_nvcc`` skips a test, saying why, where nvcc is not installed. Results are cached by
source text within a test session, since many candidates share a source.
"""

from __future__ import annotations

import functools
import hashlib
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from cudalens.check.nvcc import NvccNotFound, find_nvcc

ARCH = "sm_90"


def nvcc_path() -> Optional[str]:
    try:
        return find_nvcc()
    except NvccNotFound:
        return None


needs_nvcc = pytest.mark.skipif(nvcc_path() is None,
                                reason="nvcc (CUDA toolkit) not found on PATH or in CUDA_HOME/bin")


@dataclass(frozen=True)
class Compiled:
    """nvcc's exit status and diagnostics; ``ptx`` when PTX was asked for and produced."""

    returncode: int
    stderr: str
    ptx: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@functools.lru_cache(maxsize=512)
def compile_source(source: str, *, ptx: bool = False) -> Compiled:
    """Compiles ``source`` for ``ARCH`` (``-cubin``, or ``-ptx`` when ``ptx``)."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    with tempfile.TemporaryDirectory(prefix="cudalens-nvcc-") as tmp:
        src = Path(tmp) / f"{digest}.cu"
        src.write_text(source, encoding="utf-8")
        out = Path(tmp) / ("out.ptx" if ptx else "out.cubin")
        mode = "-ptx" if ptx else "-cubin"
        proc = subprocess.run([nvcc_path() or "nvcc", mode, f"-arch={ARCH}", "-o", str(out),
                               str(src)], capture_output=True, text=True, timeout=120)
        text = out.read_text() if ptx and proc.returncode == 0 else ""
    return Compiled(proc.returncode, proc.stderr.replace(str(src), "<candidate>"), text)
