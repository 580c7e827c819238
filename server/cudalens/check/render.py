"""Plain-text rendering of a ``CheckResult`` for the CLI (``cudalens check FILE``)."""

from __future__ import annotations

from cudalens.check.report import CheckResult, DeviceFunctionResources, Diagnostic, KernelResources


def _bytes(n: int) -> str:
    return f"{n} B"


def _spills(r: KernelResources | DeviceFunctionResources) -> str:
    if not r.spills:
        return "no spills"
    return f"spills {_bytes(r.spill_store_bytes)} stores / {_bytes(r.spill_load_bytes)} loads"


def format_kernel(k: KernelResources, with_arch: bool = False) -> str:
    """``saxpy: 16 registers, 0 B shared, 0 B stack, no spills`` (`` [sm_80]`` appended
    when ``with_arch``)."""
    line = (f"{k.name}: {k.registers} registers, {_bytes(k.shared_bytes)} shared, "
            f"{_bytes(k.stack_bytes)} stack, {_spills(k)}")
    return line + (f" [{k.arch}]" if with_arch else "")


def format_device_function(f: DeviceFunctionResources, with_arch: bool = False) -> str:
    """``  __device__ fib: 24 B stack, spills 20 B stores / 20 B loads (called from b)``."""
    line = f"  __device__ {f.name}: {_bytes(f.stack_bytes)} stack, {_spills(f)}"
    if f.callers:
        line += f" (called from {', '.join(f.callers)})"
    return line + (f" [{f.arch}]" if with_arch else "")


def format_diagnostic(d: Diagnostic) -> str:
    """``path:line: severity: message [code]``, ``tool: severity: message`` when the message
    has no file; continuation lines and notes indented below."""
    where = d.path if d.path is not None else d.tool
    if d.path is not None and d.line is not None:
        where = f"{d.path}:{d.line}"
    first, *rest = d.message.split("\n")
    code = f" [{d.code}]" if d.code else ""
    lines = [f"{where}: {d.severity}: {first}{code}"]
    lines += [f"    {t}" for t in rest]
    for n in d.notes:
        at = f"{n.path}:{n.line}: " if n.path is not None and n.line is not None else ""
        lines.append(f"  {at}note: {n.message}")
    return "\n".join(lines)


def format_check(result: CheckResult) -> str:
    """Diagnostics first (as the compiler printed them, one block each), then one line per
    kernel and per non-inlined ``__device__`` function, then a summary line.
    """
    out = [format_diagnostic(d) for d in result.diagnostics]
    archs = {k.arch for k in result.kernels} | {f.arch for f in result.device_functions}
    many = len(archs) > 1
    out += [format_kernel(k, many) for k in result.kernels]
    out += [format_device_function(f, many) for f in result.device_functions]
    errors, warnings = len(result.errors), len(result.warnings)
    status = "ok" if result.ok else "failed"
    out.append(f"{result.path or 'check'}: compile {status} for {result.arch}: "
               f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}, "
               f"{len(result.kernels)} kernel{'s' * (len(result.kernels) != 1)} "
               f"({result.duration:.1f} s)")
    return "\n".join(out)
