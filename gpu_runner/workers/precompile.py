"""Compiling on the CPU while the GPU measures: nvcc runs for queued work in a thread pool.

The worker's ``Runner`` compiles each variant itself before verifying it, one after another
(``gpu_runner.compiler.compile_variant``: pycuda's ``compile`` runs nvcc, then the module is
loaded on the GPU). pycuda keeps compiled cubins in a cache directory keyed by the source, the
options, the architecture and the nvcc version. So the service runs the same pycuda ``compile``
call for every variant of a job as soon as the job is queued, several at a time (nvcc is a
separate process, so threads run in parallel), into the cache directory that the job's worker
uses. When the worker gets the job its compiles are cache reads and module loads; nvcc time for
job N+1 overlaps the GPU time of job N, and a job's variants compile in parallel.

Each compile writes into a scratch directory first and moves the finished cubin into the
shared directory with ``os.replace`` (atomic), so a worker never reads a half-written cubin.
Options and includes are checked with ``gpu_runner.compiler.check_request`` first, exactly as
the runner does (a refused one is never compiled); nothing here passes request text to a shell (nvcc gets an argument list from pycuda).
A precompile that fails changes nothing: the worker compiles and reports the error itself.
A variant that carries files (project headers) is not precompiled: pycuda's cache has no place
for them, and the worker compiles it with plain nvcc in a folder of its own.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import tempfile
from typing import Callable, Optional, Sequence

from gpu_runner.compile_log import runner_options
from gpu_runner.compiler import check_request
from gpu_runner.problem import Variant

# compile_fn(variant, arch, cache_dir) -> None; raises on failure. Injected in tests.
CompileFn = Callable[[Variant, str, str], None]


def pycuda_compile(variant: Variant, arch: str, cache_dir: str) -> None:
    """The call ``compile_variant`` makes, minus loading: pycuda's nvcc run with
    ``cache_dir``. Raises ``ImportError`` without pycuda, ``pycuda.driver.CompileError`` when
    nvcc fails."""
    from pycuda.compiler import compile as nvcc_compile  # noqa: PLC0415 (optional dependency)

    nvcc_compile(variant.source, no_extern_c=True, arch=arch,
                 options=runner_options(variant.options),
                 cache_dir=cache_dir)


class Precompiler:
    """A pool of ``threads`` compile threads feeding cache directories.

    ``submit(variants, arch, cache_dir)`` returns futures (one per variant, each resolving to
    True when the cubin is now in ``cache_dir``, False when it was skipped or failed).
    """

    def __init__(self, threads: Optional[int] = None, compile_fn: CompileFn = pycuda_compile):
        self.threads = threads or max(1, min(8, os.cpu_count() or 1))
        self._compile = compile_fn
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.threads, thread_name_prefix="cudalens-nvcc")
        self.disabled = ""  # why precompiling stopped (pycuda missing), when it did

    def submit(self, variants: Sequence[Variant], arch: str,
               cache_dir: str) -> list[concurrent.futures.Future]:
        return [self._pool.submit(self._one, v, arch, cache_dir) for v in variants]

    def _one(self, variant: Variant, arch: str, cache_dir: str) -> bool:
        if self.disabled or variant.files or check_request(variant) is not None:
            return False  # a variant with files is compiled by the worker, in its own folder
        scratch = tempfile.mkdtemp(prefix=".scratch-", dir=cache_dir)  # same file system
        try:
            try:
                self._compile(variant, arch, scratch)
            except ImportError as exc:
                self.disabled = f"pycuda does not import: {exc}"
                return False
            except Exception:  # noqa: BLE001 - the worker compiles again and reports it
                return False
            moved = False
            for name in os.listdir(scratch):
                os.replace(os.path.join(scratch, name), os.path.join(cache_dir, name))
                moved = True
            return moved
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
