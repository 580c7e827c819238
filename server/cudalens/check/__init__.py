"""Compile check: nvcc diagnostics and ptxas resource usage per kernel (no GPU needed).

``compile_check(path, text=None, arch="sm_90", options=(), nvcc="nvcc")`` -> ``CheckResult``;
``format_check(result)`` renders it for the CLI.
"""

from cudalens.check.compile import compile_check
from cudalens.check.nvcc import CheckError, NvccNotFound, NvccTimeout, find_nvcc
from cudalens.check.render import format_check
from cudalens.check.report import (
    CheckResult, DeviceFunctionResources, Diagnostic, DiagnosticNote, KernelResources,
)

__all__ = [
    "CheckError", "CheckResult", "DeviceFunctionResources", "Diagnostic", "DiagnosticNote",
    "KernelResources", "NvccNotFound", "NvccTimeout", "compile_check", "find_nvcc",
    "format_check",
]
