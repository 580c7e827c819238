"""Data classes for a compile check: compiler diagnostics and per-kernel resource usage.

Lines and columns here are 1-based, as compilers print them (LSP-facing code converts).
Sizes are in bytes. ``None`` always means "the compiler did not say", never zero.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

SEVERITIES = ("error", "warning", "remark", "note")


@dataclass(frozen=True)
class DiagnosticNote:
    """Extra location attached to a diagnostic: an instantiation context, an overload
    candidate, an ``#include`` step.

    ``path``/``line`` are ``None`` when the compiler gave no location.
    """

    message: str
    path: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class Diagnostic:
    """One compiler message.

    path: the file the message is about, as the compiler named it, except that the checked
        file is always named by the path the caller gave; ``None`` for messages about no
        file (``nvcc fatal : Unknown option``, a ptxas error with no source line).
    line: 1-based line, ``None`` when unknown.
    column: 1-based column in characters of that line, ``None`` when unknown (EDG messages
        give a caret under a macro-expanded copy of the line; the column is kept only when
        that copy lines up with the real line).
    severity: one of ``SEVERITIES``; fatal and catastrophic errors are ``"error"``.
    message: the message text; continuation lines (``argument types are: ...``) follow
        after newlines.
    code: the compiler's diagnostic number (``"177-D"`` for EDG, ``"-Wcpp"`` for the host
        compiler), ``None`` when none was printed.
    tool: who said it: ``"cudafe++"`` (the CUDA front end), ``"host compiler"`` (the
        gcc/clang preprocessor nvcc runs first), ``"ptxas"``, ``"nvcc"`` or another
        toolkit program's name.
    function: for ptxas messages naming a function, its demangled base name
        (``scale<float>``), so a client can place the message on the kernel.
    notes: instantiation contexts and related locations, outermost last, as printed.
    """

    path: str | None
    line: int | None
    column: int | None
    severity: str
    message: str
    code: str | None = None
    tool: str = "cudafe++"
    function: str | None = None
    notes: tuple[DiagnosticNote, ...] = ()


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reported for one ``__global__`` function (one entry per architecture).

    name: demangled base name (``saxpy``, ``ops::add``, ``scale<float>``); mangled: the
    symbol as ptxas printed it. registers: per thread. shared_bytes: static shared memory
    per block (ptxas omits zero). constant_bytes: sum of the ``cmem[N]`` banks ptxas listed
    for the entry, ``None`` when it listed none (CUDA 13 prints none for sm_90).
    stack_bytes: the entry's own stack frame per thread; spill_*: bytes per thread of
    register spill traffic ptxas generated. cumulative_stack_bytes: frame plus callees,
    when printed. barriers: named barriers used, when printed. arch: ``sm_90`` etc.
    Source: the ``ptxas -v`` report (``--verbose``; "Function properties for" and "Used N
    registers" lines).
    """

    name: str
    mangled: str
    registers: int
    shared_bytes: int
    constant_bytes: int | None
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    arch: str
    cumulative_stack_bytes: int | None = None
    barriers: int | None = None

    @property
    def spills(self) -> bool:
        return self.spill_store_bytes > 0 or self.spill_load_bytes > 0


@dataclass(frozen=True)
class DeviceFunctionResources:
    """A ``__device__`` function ptxas compiled as a real call (not inlined).

    ``callers``: base names of the kernels under whose report ptxas listed it (the
    kernels that call it, directly or not); empty when it was listed before any kernel
    (relocatable device code). Sizes are per thread, in bytes.
    """

    name: str
    mangled: str
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    arch: str
    callers: tuple[str, ...] = ()

    @property
    def spills(self) -> bool:
        return self.spill_store_bytes > 0 or self.spill_load_bytes > 0


@dataclass(frozen=True)
class CheckResult:
    """Outcome of ``compile_check``.

    ok: nvcc exited with status 0 and printed no error. kernels: one per kernel and
    architecture, in the order ptxas reported them. command: the nvcc argument list as
    run. duration: wall-clock seconds of the nvcc run. output: nvcc's combined
    stdout+stderr, unparsed, for anything the parser does not model. returncode: nvcc's.
    """

    ok: bool
    diagnostics: tuple[Diagnostic, ...]
    kernels: tuple[KernelResources, ...]
    command: list[str]
    duration: float
    device_functions: tuple[DeviceFunctionResources, ...] = ()
    output: str = ""
    returncode: int = 0
    path: str = ""
    arch: str = ""

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")

    @property
    def warnings(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "warning")

    def diagnostics_in(self, path: str) -> tuple[Diagnostic, ...]:
        """Diagnostics located in ``path`` (compared as absolute, normalized paths)."""
        want = os.path.normcase(os.path.abspath(path))
        return tuple(d for d in self.diagnostics
                     if d.path is not None and os.path.normcase(os.path.abspath(d.path)) == want)

    def kernel(self, name: str) -> KernelResources:
        """The kernel whose base name (or mangled name) is ``name``.

        Raises KeyError naming the kernels that ptxas did report.
        """
        for k in self.kernels:
            if name in (k.name, k.mangled):
                return k
        known = ", ".join(k.name for k in self.kernels) or "none"
        raise KeyError(f"ptxas reported no kernel named {name!r} for {self.path or 'this file'}"
                       f" (kernels reported: {known})")
