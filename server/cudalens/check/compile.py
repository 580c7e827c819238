"""``compile_check``: compile one CUDA file with nvcc, collect diagnostics and per-kernel
resource usage. Needs nvcc, not a GPU.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence

from cudalens.check.diagnostics import parse_diagnostics
from cudalens.check.nvcc import build_command, check_options, find_nvcc, run_nvcc
from cudalens.check.ptx_lines import ptx_source_location
from cudalens.check.ptxas_report import parse_ptxas_report
from cudalens.check.report import CheckResult, Diagnostic
from cudalens.textfile import ERRORS

_SOURCE_NAME = "source.cu"
_WRAPPER_NAME = "header-check.cu"
_OUTPUT_TAIL_LINES = 20


def _line_directive(path: str) -> str:
    escaped = path.replace("\\", "\\\\").replace('"', '\\"')
    return f'#line 1 "{escaped}"\n'


def is_header(path: str) -> bool:
    """Whether ``path`` is compiled as a header (anything but a ``.cu`` file): included
    (``-include``) into a generated empty ``.cu``, so that the host compiler does not warn
    "#pragma once in main file" and every message still names the header's own lines."""
    return os.path.splitext(path)[1].lower() != ".cu"


def _same_file(a: str, b: str) -> bool:
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def compile_check(path: str, text: str | None = None, *, arch: str = "sm_90",
                  options: Sequence[str] = (), nvcc: str = "nvcc", timeout: float = 120,
                  lineinfo: bool = True) -> CheckResult:
    """Compile ``path`` (or ``text``, the editor's unsaved contents of ``path``) to a cubin
    for ``arch`` and report diagnostics and ptxas resource usage.

    path: the CUDA file; relative paths are relative to the current directory, which is
        also nvcc's. Diagnostics in this file carry ``path`` exactly as given.
    text: when given, compiled instead of the file on disk: written to a temporary file
        that starts with ``#line 1 "path"`` so every message names ``path`` with its real
        line numbers; ``path``'s directory is added as ``-I`` so its ``#include "..."``
        still resolve (an angle-bracket include may then also find files there).
    arch: ``sm_XY`` target; left out when ``options`` carry ``-arch``/``-gencode``.
    options: extra nvcc options (``-maxrregcount=32``, ``-DN=4``, ``-I...``); options that
        choose the output kind or location (``-o``, ``-c``, ``-ptx``...) raise ValueError.
    A header (``is_header``: ``.cuh``, ``.h``...) is compiled as ``-include HEADER`` of a
    generated empty ``.cu`` (its text, when given, from a copy in the temporary folder that
    starts with the ``#line`` directive), so it is not the main file and ``#pragma once`` draws
    no warning; notes naming the generated file or the command line are dropped.
    lineinfo: pass ``-lineinfo`` so ptxas errors in inline PTX map to source lines (it
        does not change the generated code's register or stack usage).
    timeout: seconds before nvcc is stopped (NvccTimeout).

    Raises NvccNotFound when nvcc cannot be found or started, FileNotFoundError when
    ``text`` is None and ``path`` does not exist, NvccTimeout, ValueError (options).
    A file that does not compile is not an exception: ``ok`` is False and the errors are
    in ``diagnostics``.
    """
    nvcc_path = find_nvcc(nvcc)
    check_options(options)
    if text is None and not os.path.isfile(path):
        raise FileNotFoundError(f"cannot check {path}: no such file (cwd {os.getcwd()})")

    workdir = tempfile.mkdtemp(prefix="cudalens-check-")
    try:
        keep_dir = os.path.join(workdir, "keep")
        os.mkdir(keep_dir)
        header = is_header(path)
        if text is not None:
            name = os.path.basename(path) if header else _SOURCE_NAME
            source = os.path.join(workdir, "text", name) if header else \
                os.path.join(workdir, _SOURCE_NAME)
            os.makedirs(os.path.dirname(source), exist_ok=True)
            with open(source, "w", encoding="utf-8", errors=ERRORS, newline="") as f:
                f.write(_line_directive(path))
                f.write(text)
            # As given (relative stays relative) so headers are named as an in-place
            # compile of ``path`` would name them.
            include_dirs = [os.path.dirname(path) or "."]
        else:
            source = path
            include_dirs = []
        main = source  # the file whose messages name ``path``
        wrapper = None
        extra: list[str] = []
        if header:
            wrapper = os.path.join(workdir, _WRAPPER_NAME)
            with open(wrapper, "w", encoding="utf-8"):
                pass
            extra = ["-include", source]
            source = wrapper
        command = build_command(nvcc_path, source, os.path.join(workdir, "out.cubin"), keep_dir,
                                arch=arch, options=(*extra, *options),
                                include_dirs=include_dirs,
                                lineinfo=lineinfo)
        # nvcc's temporaries go to the private folder too: a failed compile leaves files
        # (NAME-xxxx..lgenfe.bc) in TMPDIR, and the language server compiles on every edit.
        run = run_nvcc(command, timeout=timeout, temp_dir=workdir)

        def resolve(reported: str) -> str:
            if reported == path or _same_file(reported, path) or _same_file(reported, main):
                return path
            return os.path.normpath(reported)

        lines_cache: dict[str, list[str] | None] = {}

        def source_line(reported: str, number: int) -> str | None:
            if reported not in lines_cache:
                if reported == path and text is not None:
                    lines_cache[reported] = text.splitlines()
                else:
                    try:
                        with open(reported, encoding="utf-8", errors="replace") as f:
                            lines_cache[reported] = f.read().splitlines()
                    except OSError:
                        lines_cache[reported] = None
            lines = lines_cache[reported]
            if lines is None or not 1 <= number <= len(lines):
                return None
            return lines[number - 1]

        def ptx_location(ptx_path: str, ptx_line: int):
            try:
                with open(ptx_path, encoding="utf-8", errors="replace") as f:
                    ptx = f.read()
            except OSError:
                return None
            loc = ptx_source_location(ptx, ptx_line)
            if loc is None:
                return None
            return resolve(loc.path), loc.line, loc.column

        diagnostics = parse_diagnostics(run.output, resolve_path=resolve,
                                        source_line=source_line, ptx_location=ptx_location)
        if wrapper is not None:  # "included from header-check.cu:1" says nothing of the user's
            diagnostics = [_without_wrapper(d, wrapper) for d in diagnostics]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    if run.returncode != 0 and not any(d.severity == "error" for d in diagnostics):
        tail = "\n".join(run.output.strip().splitlines()[-_OUTPUT_TAIL_LINES:])
        diagnostics.append(Diagnostic(
            path=None, line=None, column=None, severity="error", tool="nvcc",
            message=f"nvcc exited with status {run.returncode} without an error message "
                    f"cudalens recognizes; its output ends with:\n{tail}"))
    report = parse_ptxas_report(run.output, default_arch=arch)
    ok = run.returncode == 0 and not any(d.severity == "error" for d in diagnostics)
    return CheckResult(ok=ok, diagnostics=tuple(diagnostics), kernels=report.kernels,
                       command=command, duration=run.duration,
                       device_functions=report.device_functions, output=run.output,
                       returncode=run.returncode, path=path, arch=arch)


def _without_wrapper(d: Diagnostic, wrapper: str) -> Diagnostic:
    """``d`` without the notes that name the generated ``.cu`` including a checked header."""
    import dataclasses  # noqa: PLC0415

    notes = tuple(n for n in d.notes if n.path is None or not (
        n.path.startswith("<") or _same_file(n.path, wrapper)))
    return d if notes == d.notes else dataclasses.replace(d, notes=notes)
