"""Parse the resource report ``ptxas -v`` prints (nvcc ``-Xptxas -v`` / ``--resource-usage``).

The report, as printed by ptxas 12.x-13.x (one block per entry, callees listed after it)::

    ptxas info    : Compiling entry function '_Z5saxpyifPKfPf' for 'sm_90'
    ptxas info    : Function properties for _Z5saxpyifPKfPf
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 10 registers, used 0 barriers, 2048 bytes smem, 360 bytes cmem[0]
    ptxas info    : Function properties for _Z6helperPfi
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

"Function properties" for a name other than the current entry is a non-inlined
``__device__`` function; ptxas repeats it under every kernel that reaches it. Relocatable
device code (``-rdc``) lists device functions before any entry, sometimes with a clone
suffix (``_Z4pickPKfi$1``). The items on the "Used" line vary by version and architecture;
absent items are reported as ``None`` (or 0 for shared memory, which ptxas omits at zero).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpu_runner.symbols import base_name, demangle

from cudalens.check.report import DeviceFunctionResources, KernelResources

_PREFIX = r"^ptxas\s+info\s*:\s*"
_COMPILING = re.compile(_PREFIX + r"Compiling (?P<entry>entry )?function '(?P<name>[^']+)' for '(?P<arch>[^']+)'")
_PROPERTIES = re.compile(_PREFIX + r"Function properties for (?P<name>\S+)\s*$")
_FRAME = re.compile(r"^\s*(?P<stack>\d+) bytes stack frame, (?P<st>\d+) bytes spill stores, "
                    r"(?P<ld>\d+) bytes spill loads")
_USED = re.compile(_PREFIX + r"Used (?P<regs>\d+) registers(?P<rest>.*)$")
_ITEM_BARRIERS = re.compile(r"^used (\d+) barriers$")
_ITEM_SMEM = re.compile(r"^(\d+) bytes smem$")
_ITEM_CMEM = re.compile(r"^(\d+) bytes cmem\[\d+\]$")
_ITEM_CUMULATIVE = re.compile(r"^(\d+) bytes cumulative stack size$")
_OTHER_REPORT = re.compile(_PREFIX + r"(?:\d+ bytes gmem|Compile time = |Finished )")


def is_report_line(line: str) -> bool:
    """Whether ``line`` belongs to the resource report (so is not a diagnostic)."""
    return bool(_COMPILING.match(line) or _PROPERTIES.match(line) or _FRAME.match(line)
                or _USED.match(line) or _OTHER_REPORT.match(line))


def display_name(symbol: str) -> str:
    """Demangled base name of a ptxas symbol: ``_Z5scaleIfEvPT_S0_i`` -> ``scale<float>``.

    A ptxas clone suffix (``$1``) is dropped before demangling.
    """
    return base_name(demangle(symbol.split("$", 1)[0]))


@dataclass(frozen=True)
class PtxasReport:
    kernels: tuple[KernelResources, ...]
    device_functions: tuple[DeviceFunctionResources, ...]


@dataclass
class _Entry:
    mangled: str
    arch: str
    frame: tuple[int, int, int] | None = None
    registers: int | None = None
    shared: int = 0
    constant: int | None = None
    cumulative: int | None = None
    barriers: int | None = None


def parse_ptxas_report(output: str, default_arch: str = "") -> PtxasReport:
    """Kernels and non-inlined device functions from nvcc/ptxas output.

    ``output`` may hold any other compiler output too; only report lines are read.
    A kernel without a "Used N registers" line (ptxas stopped early) is left out.
    Device functions are merged per (symbol, architecture), collecting their callers.
    ``default_arch`` is used for device functions listed before any "Compiling" line.
    """
    entries: list[_Entry] = []
    device: dict[tuple[str, str], dict] = {}
    current: _Entry | None = None
    subject: str | None = None  # the symbol of the last "Function properties for" line
    arch = default_arch

    for line in output.splitlines():
        m = _COMPILING.match(line)
        if m:
            arch = m.group("arch")
            if m.group("entry"):
                current = _Entry(m.group("name"), arch)
                entries.append(current)
            subject = None
            continue
        m = _PROPERTIES.match(line)
        if m:
            subject = m.group("name")
            continue
        m = _FRAME.match(line)
        if m and subject is not None:
            frame = (int(m.group("stack")), int(m.group("st")), int(m.group("ld")))
            if current is not None and subject == current.mangled and current.frame is None:
                current.frame = frame
            elif current is None or subject != current.mangled:
                key = (subject, arch)
                info = device.setdefault(key, {"frame": frame, "callers": []})
                if current is not None:
                    caller = display_name(current.mangled)
                    if caller not in info["callers"]:
                        info["callers"].append(caller)
            subject = None
            continue
        m = _USED.match(line)
        if m and current is not None:
            current.registers = int(m.group("regs"))
            for item in (s.strip() for s in m.group("rest").split(",")):
                if not item:
                    continue
                if mm := _ITEM_BARRIERS.match(item):
                    current.barriers = int(mm.group(1))
                elif mm := _ITEM_SMEM.match(item):
                    current.shared = int(mm.group(1))
                elif mm := _ITEM_CMEM.match(item):
                    current.constant = (current.constant or 0) + int(mm.group(1))
                elif mm := _ITEM_CUMULATIVE.match(item):
                    current.cumulative = int(mm.group(1))

    kernels = tuple(
        KernelResources(
            name=display_name(e.mangled), mangled=e.mangled, registers=e.registers,
            shared_bytes=e.shared, constant_bytes=e.constant,
            stack_bytes=e.frame[0] if e.frame else 0,
            spill_store_bytes=e.frame[1] if e.frame else 0,
            spill_load_bytes=e.frame[2] if e.frame else 0,
            arch=e.arch, cumulative_stack_bytes=e.cumulative, barriers=e.barriers)
        for e in entries if e.registers is not None)
    functions = tuple(
        DeviceFunctionResources(
            name=display_name(sym), mangled=sym, stack_bytes=info["frame"][0],
            spill_store_bytes=info["frame"][1], spill_load_bytes=info["frame"][2],
            arch=a, callers=tuple(info["callers"]))
        for (sym, a), info in device.items())
    return PtxasReport(kernels, functions)
