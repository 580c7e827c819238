"""Device buffers of one case, with guard regions, poisoning, restoring and read-back.

Each pointer argument gets one allocation laid out as ``[guard | data | guard]``. Each guard
is ``GUARD_BYTES`` long and filled with ``patterns.GUARD_BYTE``; the data starts
``GUARD_BYTES`` (a multiple of 256) after the allocation's start, so it keeps the 256-byte
alignment of ``cuMemAlloc``, and the after-guard starts right at the data's last byte + 1, so
a write one element past the end lands in it. Input and in-out buffers keep a pristine device
copy of their initial values, from which ``restore`` copies them back before a launch.

All methods need the owning ``GpuSession``'s context to be current.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

import numpy as np

from gpu_runner import elements
from gpu_runner.patterns import FLOAT_POISON_HALFWORD, GUARD_BYTE, INT_POISON_BYTE, halfword_poison
from gpu_runner.problem import Buffer, Case, Scalar

GUARD_BYTES = 64 * 1024  # catches overruns of up to 8192 float64 elements on either side


@dataclass(frozen=True)
class GuardDamage:
    """Bytes changed in the guard ``side`` (``"before"`` or ``"after"``) of ``buffer``.
    ``index`` is the element index nearest the data that was hit (``length`` or more after
    the end, negative before the start); ``nbytes`` how many guard bytes changed."""

    buffer: str
    side: str
    index: int
    nbytes: int


class _DeviceBuffer:
    def __init__(self, drv, spec: Buffer):
        self.spec = spec
        self.nbytes = spec.nbytes
        self.alloc = drv.mem_alloc(2 * GUARD_BYTES + self.nbytes)
        self.base = int(self.alloc)
        self.ptr = self.base + GUARD_BYTES
        self.pristine = drv.mem_alloc(self.nbytes) if spec.role != "out" else None


class DeviceBuffers:
    """Device storage for every pointer argument of ``case``, filled from ``inputs`` (the
    host arrays of ``inputs.make_inputs``). Raises ``ValueError`` when an input is missing or
    has the wrong length or type, and pycuda's ``MemoryError`` when the device is full."""

    def __init__(self, drv, case: Case, inputs: Mapping[str, np.ndarray]):
        self.drv = drv
        self.case = case
        self.inputs = dict(inputs)
        self._bufs: dict[str, _DeviceBuffer] = {}
        try:
            for arg in case.args:
                if isinstance(arg, Buffer):
                    self._add(arg)
        except BaseException:
            self.free()
            raise

    def _add(self, spec: Buffer) -> None:
        buf = _DeviceBuffer(self.drv, spec)
        self._bufs[spec.name] = buf
        self.drv.memset_d8(buf.base, GUARD_BYTE, 2 * GUARD_BYTES + buf.nbytes)
        if spec.role == "out":
            return
        host = self.inputs.get(spec.name)
        if host is None:
            raise ValueError(f"case '{self.case.label}': no input values for buffer '{spec.name}'")
        if host.shape != (spec.length,) or host.dtype != elements.storage_dtype(spec.dtype):
            raise ValueError(f"case '{self.case.label}', buffer '{spec.name}': expected "
                             f"{spec.length} {spec.dtype} values, found {host.shape} {host.dtype}")
        host = np.ascontiguousarray(host)
        self.drv.memcpy_htod(buf.pristine, host)
        self.drv.memcpy_htod(buf.ptr, host)

    # -- launch arguments --------------------------------------------------------------------

    def kernel_args(self) -> list:
        """The case's arguments in parameter order as pycuda launch arguments: buffers as
        ``numpy.uintp`` device addresses, scalars as numpy scalars of their type (float16
        scalars as their 16-bit pattern, which has the same size and alignment)."""
        out: list = []
        for arg in self.case.args:
            if isinstance(arg, Scalar):
                if elements.is_narrow(arg.dtype):  # its bit pattern, as the kernel reads it
                    out.append(elements.encode(np.array([arg.value]), arg.dtype)[0])
                    continue
                value = np.dtype(arg.dtype).type(arg.value)
                out.append(value.view(np.uint16) if arg.dtype == "float16" else value)
            else:
                out.append(np.uintp(self._bufs[arg.name].ptr))
        return out

    # -- before a launch ---------------------------------------------------------------------

    def restore(self, stream, roles: tuple[str, ...] = ("in", "inout")) -> None:
        """Copy the pristine values back into every buffer whose role is in ``roles``."""
        for buf in self._bufs.values():
            if buf.spec.role in roles and buf.pristine is not None:
                self.drv.memcpy_dtod_async(buf.ptr, buf.pristine, buf.nbytes, stream)

    def reset_guards(self, stream) -> None:
        """Refill every guard region with ``GUARD_BYTE`` (undoing an earlier variant's damage)."""
        for buf in self._bufs.values():
            self.drv.memset_d8_async(buf.base, GUARD_BYTE, GUARD_BYTES, stream)
            self.drv.memset_d8_async(buf.ptr + buf.nbytes, GUARD_BYTE, GUARD_BYTES, stream)

    def poison(self, stream) -> None:
        """Fill every ``out`` buffer with the poison of its type (see ``patterns``)."""
        for buf in self._bufs.values():
            if buf.spec.role != "out":
                continue
            if halfword_poison(buf.spec.dtype):
                self.drv.memset_d16_async(buf.ptr, FLOAT_POISON_HALFWORD, buf.nbytes // 2, stream)
            else:
                self.drv.memset_d8_async(buf.ptr, INT_POISON_BYTE, buf.nbytes, stream)

    # -- after a launch (synchronous: call once the kernel has finished) ---------------------

    def read(self, name: str) -> np.ndarray:
        """The data of buffer ``name`` as a host array of its length and type."""
        buf = self._bufs[name]
        host = np.empty(buf.spec.length, dtype=elements.storage_dtype(buf.spec.dtype))
        self.drv.memcpy_dtoh(host, buf.ptr)
        return host

    def read_outputs(self) -> dict[str, np.ndarray]:
        """Host copies of every ``out`` and ``inout`` buffer, keyed by name."""
        return {n: self.read(n) for n, b in self._bufs.items() if b.spec.role != "in"}

    def guard_damage(self) -> Optional[GuardDamage]:
        """The first damaged guard in parameter order (before-guard first), or None."""
        for name, buf in self._bufs.items():
            raw = np.empty(GUARD_BYTES, dtype=np.uint8)
            size = buf.spec.itemsize
            self.drv.memcpy_dtoh(raw, buf.base)
            hit = np.flatnonzero(raw != GUARD_BYTE)
            if hit.size:
                nearest = int(hit[-1])  # closest to the data
                return GuardDamage(name, "before", -((GUARD_BYTES - nearest - 1) // size + 1),
                                   int(hit.size))
            self.drv.memcpy_dtoh(raw, buf.ptr + buf.nbytes)
            hit = np.flatnonzero(raw != GUARD_BYTE)
            if hit.size:
                return GuardDamage(name, "after", buf.spec.length + int(hit[0]) // size,
                                   int(hit.size))
        return None

    # -- device-side views (for ``screen``) ----------------------------------------------------

    def data_ptr(self, name: str) -> int:
        """The device address of buffer ``name``'s data (after its before-guard)."""
        return self._bufs[name].ptr

    def pristine_ptr(self, name: str) -> int:
        """The device address of the pristine copy of ``in``/``inout`` buffer ``name``."""
        return int(self._bufs[name].pristine)

    def output_specs(self) -> list[Buffer]:
        """The ``out`` and ``inout`` buffers, in parameter order."""
        return [b.spec for b in self._bufs.values() if b.spec.role != "in"]

    def input_specs(self) -> list[Buffer]:
        """The ``in`` buffers, in parameter order."""
        return [b.spec for b in self._bufs.values() if b.spec.role == "in"]

    def snapshot_outputs(self, into: Optional["OutputSnapshot"], stream) -> "OutputSnapshot":
        """Copy every ``out``/``inout`` buffer's data, on the device, into ``into`` (a
        snapshot of this object's outputs made earlier) or a new ``OutputSnapshot``; enqueued
        on ``stream`` (synchronize before reading it). Raises pycuda's ``MemoryError`` when the
        device is full."""
        snap = into or OutputSnapshot(self.drv, self.output_specs())
        for spec in self.output_specs():
            self.drv.memcpy_dtod_async(snap.ptr(spec.name), self._bufs[spec.name].ptr,
                                       spec.nbytes, stream)
        return snap

    def free(self) -> None:
        """Release the device memory (safe to call twice)."""
        for buf in self._bufs.values():
            for alloc in (buf.alloc, buf.pristine):
                if alloc is not None:
                    try:
                        alloc.free()
                    except self.drv.Error:
                        pass
        self._bufs.clear()


class OutputSnapshot:
    """Device copies of a case's output buffers (``DeviceBuffers.snapshot_outputs``), read
    back to the host only on demand."""

    def __init__(self, drv, specs: list[Buffer]):
        self.drv = drv
        self.specs = {s.name: s for s in specs}
        self._alloc: dict = {}
        try:
            for spec in specs:
                self._alloc[spec.name] = drv.mem_alloc(max(spec.nbytes, 1))
        except BaseException:
            self.free()
            raise

    def ptr(self, name: str) -> int:
        return int(self._alloc[name])

    def read(self, name: str) -> np.ndarray:
        """Buffer ``name``'s copy as a host array of its length and type."""
        spec = self.specs[name]
        host = np.empty(spec.length, dtype=elements.storage_dtype(spec.dtype))
        if spec.nbytes:
            self.drv.memcpy_dtoh(host, self._alloc[name])
        return host

    def free(self) -> None:
        for alloc in self._alloc.values():
            try:
                alloc.free()
            except self.drv.Error:
                pass
        self._alloc = {}
