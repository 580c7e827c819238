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
(``gpu_runner.includes``: no absolute paths, no ``..`` but to a sent file, no computed
includes), since nvcc's log would echo an included host file; a refused include is a compile error naming it and its line,
and nvcc never runs. Every compile runs with ``compile_log.runner_options`` (no source-line
echo, ``dependency`` poisoned) and its log passes ``compile_log.guard_log`` (only diagnostics
about the request's files and the toolkit's headers), in case the include check missed one.

A variant may carry project headers (``Variant.files``): their names and sizes are checked
(``includes.check_file_names``), their includes too, and relative ``-IDIR`` options (no ``..``,
no absolute path) may name their folders. Such a variant is compiled with plain nvcc in a fresh
folder holding the source and the files only (``gpu_runner.compile_folder``).
"""

from __future__ import annotations

import re
import subprocess
import time
import warnings
from dataclasses import dataclass
from typing import Optional

from gpu_runner.cubin import CubinError, KernelNotFoundError, find_kernel_symbol
from gpu_runner.compile_folder import MAIN, OUTPUT, compile_in_folder
from gpu_runner.compile_log import guard_log, pycuda_source_names, runner_options
from gpu_runner.includes import (
    check_file_names, check_includes, name_problem, source_path_problems,
)
from gpu_runner.problem import Variant
from gpu_runner.report import CompileReport

ALLOWED_OPTIONS = (  # full-match regular expressions
    r"--?use_fast_math", r"--?(ftz|prec-div|prec-sqrt|fmad)=(true|false)",
    r"--?maxrregcount=\d+", r"-O[0-3]", r"-Xptxas=-O[0-3]", r"-lineinfo",
    r"--generate-line-info", r"--?std=c\+\+\d\d", r"-D[A-Za-z_]\w*(=[\w.+-]*)?",
    r"--?extra-device-vectorization", r"--?restrict", r"-U[A-Za-z_]\w*",
    r"--?expt-relaxed-constexpr", r"--?(expt-)?extended-lambda",
)
_INCLUDE_DIR = re.compile(r"-I([A-Za-z0-9_.][A-Za-z0-9_.+/-]*)")


def include_option_problem(opt: str) -> Optional[str]:
    """For a ``-I`` option: None when it names a relative folder inside the compile's folder
    (``-Iinclude``, ``-I.``), else why not; for any other option: None."""
    if not opt.startswith("-I"):
        return None
    why = name_problem(opt[2:])
    if why is None and not _INCLUDE_DIR.fullmatch(opt):
        why = "expected -IDIR with DIR relative, of letters, digits and '_.+-/'"
    return f"nvcc option '{opt}' is not accepted by the runner: {why}" if why else None


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
        if opt.startswith("-I"):
            bad = include_option_problem(opt)
            if bad:
                return bad
            continue
        if not any(re.fullmatch(p, opt) for p in ALLOWED_OPTIONS):
            return (f"nvcc option '{opt}' is not accepted by the runner; accepted: -use_fast_math, "
                    f"-ftz=, -prec-div=, -prec-sqrt=, -fmad= (true/false), -maxrregcount=N, "
                    f"-O0..-O3, -Xptxas=-O0..3, -lineinfo, -std=c++NN, -DNAME[=VALUE], "
                    f"-extra-device-vectorization, -restrict, -UNAME, --expt-relaxed-constexpr, "
                    f"--extended-lambda, -IDIR (relative, for the files sent)")
    return None


def check_request(variant: Variant) -> Optional[str]:
    """None when ``variant`` may be handed to nvcc, else why not: a refused option
    (``check_options``), file (``includes.check_file_names``) or include, of the source or of a
    sent file (``includes.check_includes``, naming file, line and directive)."""
    bad = check_options(tuple(variant.options))
    if bad:
        return bad
    files = dict(variant.files or {})
    names = check_file_names(files)
    names += [f"files['{n}']: the name is the runner's own ({MAIN}, {OUTPUT})"
              for n in files if n in (MAIN, OUTPUT)]
    if variant.source_path != MAIN:  # at MAIN: the names above already say it
        names += source_path_problems(variant.source_path, files)
    if names:
        return f"variant '{variant.label}': " + "; ".join(names)
    bad = check_includes(variant.source, files, main=variant.source_path)
    return f"variant '{variant.label}': {bad}" if bad else None


def _failed(variant: Variant, log: str, started: float) -> CompiledVariant:
    return CompiledVariant(variant, CompileReport(variant=variant.label, ok=False, log=log,
                                                  seconds=time.perf_counter() - started))


def _text(output) -> str:
    """nvcc's captured output as text: pycuda's ``CompileError`` may hold bytes or str."""
    if isinstance(output, bytes):
        output = output.decode("utf-8", errors="replace")
    return (output or "").strip()


def compile_variant(session, variant: Variant, *, cache_dir=None) -> CompiledVariant:
    """Compile ``variant`` for the session's device and load its kernel into the session's
    current context. ``cache_dir`` is passed to pycuda (None: pycuda's per-user cache,
    False: no cache). Never raises for a bad variant; see the module doc."""
    drv = session.drv
    started = time.perf_counter()
    bad = check_request(variant)
    if bad:
        return _failed(variant, bad, started)
    major, minor = session.device.compute_capability()
    if variant.files:
        cubin, log = cubin_with_files(variant, f"sm_{major}{minor}")
        if cubin is None:
            return _failed(variant, log, started)
        return _load(session, variant, cubin, log, started)
    from pycuda.compiler import compile as nvcc_compile  # noqa: PLC0415 (optional dependency)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            cubin = nvcc_compile(variant.source, no_extern_c=True, arch=f"sm_{major}{minor}",
                                 options=runner_options(variant.options), cache_dir=cache_dir)
        except drv.CompileError as e:
            log = pycuda_source_names(
                "\n".join(s for s in (_text(e.stderr), _text(e.stdout)) if s))
            return _failed(variant, f"nvcc failed for variant '{variant.label}':\n"
                                    f"{guard_log(log) if log else str(e)}", started)
    log = guard_log(pycuda_source_names("\n".join(str(w.message) for w in caught)))
    return _load(session, variant, cubin, log, started)


def cubin_with_files(variant: Variant, arch: str, nvcc: str = "nvcc"
                     ) -> tuple[Optional[bytes], str]:
    """(cubin, log) of a variant that carries ``files``, compiled for ``arch`` (``sm_XY``) with
    plain nvcc in a fresh folder holding the source and the files (no pycuda, no GPU);
    (None, message) when the request is refused (``check_request``), nvcc fails or cannot run."""
    bad = check_request(variant)
    if bad:
        return None, bad
    try:
        done = compile_in_folder(variant.source, variant.files, variant.options, arch=arch,
                                 nvcc=nvcc, source_path=variant.source_path)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"nvcc could not run for variant '{variant.label}': {e}"
    if done.cubin is None:
        return None, f"nvcc failed for variant '{variant.label}':\n{done.log}"
    return done.cubin, done.log


def _load(session, variant: Variant, cubin: bytes, log: str, started: float) -> CompiledVariant:
    drv = session.drv
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

