"""Emptying the L2 cache between timed launches.

Two ways, both over a buffer of twice the L2 size:

- ``"read"`` (the default): a small kernel reads the whole buffer (16-byte loads, which
  allocate in L2). Lines that earlier writes left dirty (the poisoning of outputs, the restoring
  of in-out buffers, the previous kernel's outputs) are written back to memory during the flush,
  and the L2 ends up holding only clean lines of the flush buffer, which the timed kernel can
  drop for free.
- ``"write"``: ``cuMemsetD32Async`` over the buffer. Simpler, but the L2 ends up full of *dirty*
  lines of the flush buffer, and the timed kernel pays for writing them back as it evicts them.
  Measured on an H200 (driver 580.159.04, 2026-11-29, ``test_runner_gpu.py``, 30 rounds, two
  runs of each): saxpy on 2^22 floats (48 MB moved) took a median 20.5 us after a write flush
  and 16.1 to 16.2 us after a read flush (2450 vs 3110 GB/s, 61% vs 78% of the measured copy
  bandwidth), with a narrower spread after the read flush.

The buffer is filled once with a nonzero pattern when it is made, so the read kernel never
reads uninitialised memory.

Persisting lines. A flush by reading or writing only evicts *normal* lines: lines a kernel's
stream or graph node marked persisting (``cudaAccessPolicyWindow``, CUDA C++ Programming Guide,
"L2 Cache Access Management") stay in the set-aside part of L2 and would make a later kernel
that reads the same addresses look faster. ``reset_persisting_l2`` turns every persisting line
back into a normal one with ``cuCtxResetPersistingL2Cache`` (CUDA driver API, since 11.0) before
timing starts: through pycuda where it exposes the call, else straight from ``libcuda`` with
ctypes (the library pycuda itself loaded, so the same context is current).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

import numpy as np

from gpu_runner.cubin import find_kernel_symbol

MODES = ("read", "write")
FLUSH_BYTES_MIN = 1024 * 1024

READ_FLUSH_SOURCE = r"""
extern "C" __global__ void cudalens_l2_flush(const int4* __restrict__ data,
                                             unsigned long long count, int* sink)
{
    int acc = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < count; i += (unsigned long long)gridDim.x * blockDim.x) {
        int4 v = data[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x7fa5a5a5) sink[0] = acc;  // never true for the fill pattern; keeps the loads
}
"""


class L2Flusher:
    """Flushes the L2 of the session's device (``l2_bytes`` large) in ``mode`` (see the
    module doc). Needs the session's context current. Raises ``ValueError`` for an unknown
    mode and ``RuntimeError`` when the read kernel does not compile."""

    def __init__(self, session, l2_bytes: int, mode: str = "read"):
        if mode not in MODES:
            raise ValueError(f"L2 flush mode must be one of {', '.join(MODES)}, found '{mode}'")
        self.drv, self.session, self.mode = session.drv, session, mode
        self.nbytes = max(FLUSH_BYTES_MIN, 2 * l2_bytes) // 16 * 16
        self.buffer = self.drv.mem_alloc(self.nbytes)
        self.sink = self.drv.mem_alloc(16)
        self.drv.memset_d32(self.buffer, 0x01234567, self.nbytes // 4)
        self.function = self._read_kernel() if mode == "read" else None
        sm = int(session.device.get_attribute(self.drv.device_attribute.MULTIPROCESSOR_COUNT))
        self.grid = (max(1, sm) * 4, 1, 1)
        self.calls = 0

    def _read_kernel(self):
        from pycuda.compiler import compile as nvcc_compile

        major, minor = self.session.device.compute_capability()
        try:
            cubin = nvcc_compile(READ_FLUSH_SOURCE, no_extern_c=True, arch=f"sm_{major}{minor}")
        except self.drv.CompileError as e:
            raise RuntimeError(f"the L2 flush kernel did not compile: {e}") from e
        return self.session.load(cubin, find_kernel_symbol(cubin, "cudalens_l2_flush"))

    def flush(self, stream) -> None:
        """Enqueue one flush on ``stream``."""
        self.calls += 1
        if self.function is None:
            self.drv.memset_d32_async(self.buffer, self.calls, self.nbytes // 4, stream)
            return
        self.function(np.uintp(int(self.buffer)), np.uint64(self.nbytes // 16),
                      np.uintp(int(self.sink)), grid=self.grid, block=(256, 1, 1), shared=0,
                      stream=stream)

    def free(self) -> None:
        for alloc in (self.buffer, self.sink):
            try:
                alloc.free()
            except self.drv.Error:
                pass


LIBCUDA_NAMES = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")


def _load_libcuda():
    """``ctypes.CDLL`` of the CUDA driver library; raises ``OSError`` when none loads."""
    errors = []
    for name in LIBCUDA_NAMES + tuple(filter(None, [ctypes.util.find_library("cuda")])):
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            errors.append(f"{name}: {e}")
    raise OSError("the CUDA driver library did not load (" + "; ".join(errors) + ")")


def _error_name(lib, code: int) -> str:
    name = ctypes.c_char_p()
    try:
        if lib.cuGetErrorName(ctypes.c_int(code), ctypes.byref(name)) == 0 and name.value:
            return name.value.decode()
    except (AttributeError, OSError):
        pass
    return f"CUresult {code}"


def reset_persisting_l2(drv=None, load: Callable[[], object] | None = None) -> str:
    """Reset all persisting L2 lines of the current context to normal (see the module doc).

    ``drv`` is ``pycuda.driver`` (None: skip the pycuda route); ``load`` returns the driver
    library as a ``ctypes.CDLL`` (None: ``libcuda``; tests inject a fake). Returns what
    happened, for the timing record: ``"reset (pycuda)"``, ``"reset (libcuda)"``, or
    ``"not reset: <why>"`` (no library, no such entry point, or the CUresult's name, e.g.
    ``CUDA_ERROR_INVALID_CONTEXT`` when no context is current). Never raises.
    """
    ctx = getattr(drv, "Context", None) if drv is not None else None
    method = getattr(ctx, "reset_persisting_l2_cache", None) if ctx is not None else None
    if method is not None:
        try:
            method()
            return "reset (pycuda)"
        except Exception as e:  # noqa: BLE001 (fall back to libcuda)
            pycuda_error = f"pycuda: {e}; "
    else:
        pycuda_error = ""
    try:
        lib = (load or _load_libcuda)()
    except OSError as e:
        return f"not reset: {pycuda_error}{e}"
    fn = getattr(lib, "cuCtxResetPersistingL2Cache", None)
    if fn is None:
        return f"not reset: {pycuda_error}this CUDA driver has no cuCtxResetPersistingL2Cache"
    fn.restype = ctypes.c_int
    fn.argtypes = []
    code = int(fn())
    if code != 0:
        return f"not reset: {pycuda_error}cuCtxResetPersistingL2Cache returned {_error_name(lib, code)}"
    return "reset (libcuda)"
