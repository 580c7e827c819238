"""The SM clock and the reasons the GPU holds its clocks down, read from NVML with each result.

A timing is only comparable with another if the GPU ran at the same clocks; a GPU that is
power- or thermally-throttled runs slower for reasons that have nothing to do with the kernel.
``ClockProbe.sample()`` reads, for one device, ``nvmlDeviceGetClockInfo(NVML_CLOCK_SM)`` (MHz)
and the bit mask of ``nvmlDeviceGetCurrentClocksEventReasons`` (called
``...ClocksThrottleReasons`` before NVML 12.5; either is used, whichever the binding has),
decoded into names with ``reason_names``. The bits are those of ``nvml.h``
(``nvmlClocksEventReason*``, NVML API Reference, "Clocks Event Reasons").

NVML comes from the ``nvidia-ml-py`` package (module ``pynvml``) where it is installed, else
straight from the driver's ``libnvidia-ml.so.1`` through ctypes (``LibNvml``: the calls used
here, with the C signatures of ``nvml.h``). Where neither loads, NVML does not initialise, or
it does not see the device (some containers), the sample says so: clock ``None``, reasons
``None`` and ``source`` = ``"unknown: <why>"``; nothing raises.
"""

from __future__ import annotations

import contextlib
import ctypes
from dataclasses import dataclass

# nvml.h, nvmlClocksEventReason* (formerly nvmlClocksThrottleReason*), bit -> name.
REASON_BITS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)

# Reasons that make a timing slower than the kernel alone would: the GPU was held below the
# clocks it would otherwise run at. "gpu_idle" (nothing running when sampled) and
# "applications_clocks_setting" (a configured clock, not a slowdown) are not among them.
SLOWDOWN_REASONS = frozenset({"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown",
                              "hw_thermal_slowdown", "hw_power_brake_slowdown"})


def reason_names(mask: int) -> tuple[str, ...]:
    """The names of the bits set in NVML's clocks event reason ``mask``, in bit order; unknown
    bits as ``"bit_0x..."``. Raises ``ValueError`` for a negative mask."""
    if mask < 0:
        raise ValueError(f"expected a non-negative NVML reason mask, found {mask}")
    names = [name for bit, name in REASON_BITS if mask & bit]
    known = 0
    for bit, _ in REASON_BITS:
        known |= bit
    rest = mask & ~known
    bit = 1
    while rest:
        if rest & bit:
            names.append(f"bit_{bit:#x}")
            rest &= ~bit
        bit <<= 1
    return tuple(names)


@dataclass(frozen=True)
class ClockSample:
    """SM clock in MHz and the active clocks event reasons, or ``None`` for each when
    unknown; ``source`` is ``"nvml"`` or ``"unknown: <why>"``."""

    sm_clock_mhz: int | None
    reasons: tuple[str, ...] | None
    source: str

    @property
    def throttled(self) -> bool | None:
        """Whether any slowdown reason (``SLOWDOWN_REASONS``) was active; None when unknown."""
        if self.reasons is None:
            return None
        return any(r in SLOWDOWN_REASONS for r in self.reasons)


def unknown(why: str) -> ClockSample:
    return ClockSample(sm_clock_mhz=None, reasons=None, source=f"unknown: {why}")


NVML_LIBRARIES = ("libnvidia-ml.so.1", "libnvidia-ml.so", "nvml.dll")


class NvmlError(RuntimeError):
    """An NVML call through ``LibNvml`` returned an error; the message names the call."""


class LibNvml:
    """The part of the ``pynvml`` interface ``ClockProbe`` uses, over the NVML C library
    ``lib`` (a ``ctypes.CDLL``; None: the first of ``NVML_LIBRARIES`` that loads). Raises
    ``OSError`` when none loads. Every call raises ``NvmlError`` on an NVML error."""

    NVML_CLOCK_SM = 1  # nvml.h, nvmlClockType_t

    def __init__(self, lib=None):
        if lib is None:
            errors = []
            for name in NVML_LIBRARIES:
                try:
                    lib = ctypes.CDLL(name)
                    break
                except OSError as e:
                    errors.append(str(e))
            else:
                raise OSError("the NVML library did not load (" + "; ".join(errors) + ")")
        self._lib = lib
        reasons = (getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
                   or getattr(lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
        if reasons is not None:
            self.nvmlDeviceGetCurrentClocksEventReasons = (
                lambda handle: self._reasons(reasons, handle))

    def _check(self, call: str, code: int) -> None:
        if code != 0:
            text = f"NVML error {code}"
            with contextlib.suppress(Exception):
                fn = self._lib.nvmlErrorString
                fn.restype = ctypes.c_char_p
                raw = fn(ctypes.c_int(code))
                if raw:
                    text = raw.decode() if isinstance(raw, bytes) else str(raw)
            raise NvmlError(f"{call}: {text}")

    def nvmlInit(self) -> None:
        fn = getattr(self._lib, "nvmlInit_v2", None) or self._lib.nvmlInit
        self._check("nvmlInit", int(fn()))

    def nvmlShutdown(self) -> None:
        self._check("nvmlShutdown", int(self._lib.nvmlShutdown()))

    def nvmlDeviceGetHandleByPciBusId(self, pci_bus_id: str):
        fn = (getattr(self._lib, "nvmlDeviceGetHandleByPciBusId_v2", None)
              or self._lib.nvmlDeviceGetHandleByPciBusId)
        handle = ctypes.c_void_p()
        self._check("nvmlDeviceGetHandleByPciBusId",
                    int(fn(ctypes.c_char_p(pci_bus_id.encode()), ctypes.pointer(handle))))
        return handle

    def nvmlDeviceGetClockInfo(self, handle, clock_type: int) -> int:
        mhz = ctypes.c_uint()
        self._check("nvmlDeviceGetClockInfo",
                    int(self._lib.nvmlDeviceGetClockInfo(handle, ctypes.c_int(clock_type),
                                                         ctypes.pointer(mhz))))
        return int(mhz.value)

    def _reasons(self, fn, handle) -> int:
        mask = ctypes.c_ulonglong()
        self._check("nvmlDeviceGetCurrentClocksEventReasons",
                    int(fn(handle, ctypes.pointer(mask))))
        return int(mask.value)


class ClockProbe:
    """Reads clock samples of the device with PCI bus id ``pci_bus_id`` (as the CUDA driver
    reports it, e.g. ``"0000:19:00.0"``). ``nvml`` is the ``pynvml`` module or a ``LibNvml``
    (injected by tests; None: ``pynvml`` if it imports, else ``LibNvml()``). Initialises NVML
    once; ``close()`` shuts it down. Never raises: what goes wrong is in the samples'
    ``source``."""

    def __init__(self, pci_bus_id: str, nvml=None):
        self._nvml = nvml
        self._handle = None
        self._why = ""
        self._owns_init = False
        if self._nvml is None:
            try:
                import pynvml
                self._nvml = pynvml
            except ImportError as e:
                try:
                    self._nvml = LibNvml()
                except OSError as e2:
                    self._why = (f"neither the NVML bindings (nvidia-ml-py: {e}) nor the NVML "
                                 f"library ({e2}) are available")
                    return
        try:
            self._nvml.nvmlInit()
            self._owns_init = True
        except Exception as e:  # noqa: BLE001 (library missing or unusable)
            self._why = f"NVML did not initialise ({e})"
            return
        try:
            self._handle = self._nvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
        except Exception as e:  # noqa: BLE001 (device not visible to NVML)
            self._why = f"NVML does not see the device at PCI bus id {pci_bus_id} ({e})"

    def sample(self) -> ClockSample:
        """The current SM clock and clocks event reasons (see the module doc)."""
        if self._handle is None:
            return unknown(self._why)
        nvml = self._nvml
        try:
            mhz = int(nvml.nvmlDeviceGetClockInfo(self._handle, nvml.NVML_CLOCK_SM))
        except Exception as e:  # noqa: BLE001
            return unknown(f"NVML could not read the SM clock ({e})")
        read = (getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                or getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
        if read is None:
            return ClockSample(mhz, None, "nvml (this binding reads no clocks event reasons)")
        try:
            reasons = reason_names(int(read(self._handle)))
        except Exception as e:  # noqa: BLE001
            return ClockSample(mhz, None, f"nvml (clocks event reasons unreadable: {e})")
        return ClockSample(mhz, reasons, "nvml")

    def close(self) -> None:
        if self._owns_init:
            self._owns_init = False
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
