"""Compiling a variant to a cubin with nvcc (through pycuda) and loading its kernel.

``pycuda.compiler.compile(source, no_extern_c=True, arch="sm_XY", options=...)`` runs
``nvcc --cubin`` on the whole translation unit; the kernel's mangled symbol is then found in the
cubin (``cubin.find_kernel_symbol``) and loaded with ``module_from_buffer``. The function's
attributes give the resource report: registers per thread, static shared memory per block,
local memory per thread (stack and spills) and the most threads a block may have.

A failure (nvcc error, kernel not in the cubin, module that does not load) is a
``CompileReport`` with ``ok=False`` and the log, never an exception.

Extra nvcc options come from requests, so only options that change code generation are
accepted (``ALLOWED_OPTIONS``); anything else (output paths, include paths, host
compiler flags) is reported as a compile error. Includes are checked too
(``gpu_runner.includes``: no absolute paths, no ``..``, no computed includes), since nvcc's log
would echo an included host file; a refused include is a compile error naming it and its line,
and nvcc never runs.
"""

from __future__ import annotations

import re
import time
import warnings
from dataclasses import dataclass
from typing import Optional

from gpu_runner.cubin import CubinError, KernelNotFoundError, find_kernel_symbol
from gpu_runner.includes import check_includes
from gpu_runner.problem import Variant
from gpu_runner.report import CompileReport

ALLOWED_OPTIONS = (  # full-match regular expressions
    r"--?use_fast_math", r"--?(ftz|prec-div|prec-sqrt|fmad)=(true|false)",
    r"--?maxrregcount=\d+", r"-O[0-3]", r"-Xptxas=-O[0-3]", r"-lineinfo",
    r"--generate-line-info", r"--?std=c\+\+\d\d", r"-D[A-Za-z_]\w*(=[\w.+-]*)?",
    r"--?extra-device-vectorization", r"--?restrict",
)


@dataclass
class CompiledVariant:
    """A variant after compilation: its report, and on success the cubin, the kernel's
    mangled symbol and the loaded pycuda ``Function``."""

    variant: Variant
    report: CompileReport
    cubin: Optional[bytes] = None
    symbol: Optional[str] = None
    function: object = None


def check_options(options: tuple[str, ...]) -> Optional[str]:
    """None when every option is allowed, else a message naming the first one that is not."""
    for opt in options:
        if not any(re.fullmatch(p, opt) for p in ALLOWED_OPTIONS):
            return (f"nvcc option '{opt}' is not accepted by the runner; accepted: -use_fast_math, "
                    f"-ftz=, -prec-div=, -prec-sqrt=, -fmad= (true/false), -maxrregcount=N, "
                    f"-O0..-O3, -Xptxas=-O0..3, -lineinfo, -std=c++NN, -DNAME[=VALUE], "
                    f"-extra-device-vectorization, -restrict")
    return None


def check_request(variant: Variant) -> Optional[str]:
    """None when ``variant`` may be handed to nvcc, else why not: a refused option
    (``check_options``) or include (``includes.check_includes``, naming line and directive)."""
    bad = check_options(tuple(variant.options))
    if bad:
        return bad
    bad = check_includes(variant.source)
    return f"variant '{variant.label}': {bad}" if bad else None


def _failed(variant: Variant, log: str, started: float) -> CompiledVariant:
    return CompiledVariant(variant, CompileReport(variant=variant.label, ok=False, log=log,
                                                  seconds=time.perf_counter() - started))


def compile_variant(session, variant: Variant, *, cache_dir=None) -> CompiledVariant:
    """Compile ``variant`` for the session's device and load its kernel into the session's
    current context. ``cache_dir`` is passed to pycuda (None: pycuda's per-user cache,
    False: no cache). Never raises for a bad variant; see the module doc."""
    drv = session.drv
    started = time.perf_counter()
    bad = check_request(variant)
    if bad:
        return _failed(variant, bad, started)
    from pycuda.compiler import compile as nvcc_compile  # noqa: PLC0415 (optional dependency)

    major, minor = session.device.compute_capability()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            cubin = nvcc_compile(variant.source, no_extern_c=True, arch=f"sm_{major}{minor}",
                                 options=list(variant.options), cache_dir=cache_dir)
        except drv.CompileError as e:
            log = "\n".join(s for s in ((e.stderr or "").strip(), (e.stdout or "").strip()) if s)
            return _failed(variant, f"nvcc failed for variant '{variant.label}':\n"
                                    f"{log or str(e)}", started)
    log = "\n".join(str(w.message) for w in caught)
    try:
        symbol = find_kernel_symbol(cubin, variant.name)
    except (KernelNotFoundError, CubinError) as e:
        return _failed(variant, f"variant '{variant.label}': {e}", started)
    try:
        function = session.load(cubin, symbol)
    except drv.Error as e:
        return _failed(variant, f"variant '{variant.label}': the compiled module did not load "
                                f"on the device: {e}", started)
    attr = drv.function_attribute
    report = CompileReport(
        variant=variant.label, ok=True,
        registers=function.get_attribute(attr.NUM_REGS),
        static_shared_bytes=function.get_attribute(attr.SHARED_SIZE_BYTES),
        local_bytes=function.get_attribute(attr.LOCAL_SIZE_BYTES),
        max_threads_per_block=function.get_attribute(attr.MAX_THREADS_PER_BLOCK),
        log=log, seconds=time.perf_counter() - started)
    return CompiledVariant(variant, report, cubin, symbol, function)

