"""Screening a launch's effects on the device, so clean runs are never read back to the host.

Verifying by reading every buffer back and comparing it with numpy costs seconds per launch
on large problems (an H200 profile of one 8-candidate transpose evaluation, 8192x8192 floats,
2026-11-30: 97 of 120 s in host read-back and numpy comparisons). Nearly every launch of a
correct candidate is clean, so the checks run first as small kernels over the device buffers,
and only a launch the screen flags is read back and judged by the host functions of
``compare`` and ``verdicts``, which produce the verdict and its message. The screen is a
filter, never the judge: a launch it clears must be one the host would clear, so each screen
flags a superset of what its host check flags:

- ``same_bits(a, b)``: any byte differs (``compare.changed`` compares the same bits).
- ``outputs_clean(ref, cand, bounds)``: an element the host's ``compare.unwritten`` or
  ``compare.mismatch`` would flag. For floating-point types the kernel evaluates the host's
  predicate with the same IEEE double operations in the same order
  (``|c - r| <= atol + rtol * |r|`` with ``__dsub_rn``/``__dmul_rn``/``__dadd_rn``, so no fused
  multiply-add changes a rounding), the same rules for NaN and infinities, and the poison bit
  pattern of ``patterns``. Integer types compare bits.
- ``abs_max(ref)``: max |x| over the finite elements in double, as ``compare.output_scale``
  computes it (for non-negative doubles the IEEE bit patterns order like the values, so an
  integer ``atomicMax`` on them is a maximum on the values).
- ``unlike_first(x)``: elements not equal to the first as doubles (NaN equal to NaN), 0 for
  a constant float output, as ``compare.is_constant`` decides it.

Each screen counts offending elements with ``atomicAdd`` into an 8-byte word read back once.
Needs the owning session's context current.
"""

from __future__ import annotations

import numpy as np

from gpu_runner.compare import Bounds
from gpu_runner.cubin import find_kernel_symbol
from gpu_runner import elements
from gpu_runner.patterns import FLOAT_POISON_HALFWORD, is_float

SCREEN_SOURCE = r"""
#include <cuda_fp16.h>

typedef unsigned long long u64;

__device__ __forceinline__ double as_double(float v) { return (double)v; }
__device__ __forceinline__ double as_double(double v) { return v; }
__device__ __forceinline__ double as_double(__half v) { return (double)__half2float(v); }

// Bitwise comparison of nbytes (a multiple of 4 is not required).
extern "C" __global__ void cudalens_screen_bits(const unsigned char* a, const unsigned char* b,
                                                u64 nbytes, u64* bad)
{
    u64 stride = (u64)gridDim.x * blockDim.x;
    u64 words = nbytes / 4;
    const unsigned int* wa = (const unsigned int*)a;
    const unsigned int* wb = (const unsigned int*)b;
    u64 count = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < words; i += stride)
        count += (wa[i] != wb[i]);
    for (u64 i = words * 4 + blockIdx.x * (u64)blockDim.x + threadIdx.x; i < nbytes; i += stride)
        count += (a[i] != b[i]);
    if (count) atomicAdd(bad, count);
}

// Elements the host's unwritten() or mismatch() would flag. Bits: the unsigned type of T.
template <typename T, typename Bits>
__device__ void screen_float(const T* ref, const T* cand, u64 n, Bits poison,
                             double atol, double rtol, u64* bad)
{
    u64 stride = (u64)gridDim.x * blockDim.x;
    u64 count = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += stride) {
        Bits rb = reinterpret_cast<const Bits*>(ref)[i];
        Bits cb = reinterpret_cast<const Bits*>(cand)[i];
        bool flagged = (cb == poison) && (rb != poison);
        double r = as_double(ref[i]);
        double c = as_double(cand[i]);
        bool ok = (r == c);
        if (!ok && isfinite(r) && isfinite(c)) {
            double diff = fabs(__dsub_rn(c, r));
            ok = diff <= __dadd_rn(atol, __dmul_rn(rtol, fabs(r)));
        }
        ok = ok || (isnan(r) && isnan(c));
        count += (flagged || !ok);
    }
    if (count) atomicAdd(bad, count);
}

extern "C" __global__ void cudalens_screen_f16(const __half* ref, const __half* cand, u64 n,
                                               double atol, double rtol, u64* bad)
{ screen_float<__half, unsigned short>(ref, cand, n, (unsigned short)POISON16, atol, rtol, bad); }

extern "C" __global__ void cudalens_screen_f32(const float* ref, const float* cand, u64 n,
                                               double atol, double rtol, u64* bad)
{ screen_float<float, unsigned int>(ref, cand, n, POISON32, atol, rtol, bad); }

extern "C" __global__ void cudalens_screen_f64(const double* ref, const double* cand, u64 n,
                                               double atol, double rtol, u64* bad)
{ screen_float<double, u64>(ref, cand, n, POISON64, atol, rtol, bad); }

template <typename T>
__device__ void abs_max(const T* x, u64 n, u64* out)
{
    u64 stride = (u64)gridDim.x * blockDim.x;
    double best = 0.0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += stride) {
        double v = as_double(x[i]);
        if (isfinite(v)) best = fmax(best, fabs(v));
    }
    atomicMax(out, (u64)__double_as_longlong(best));
}

extern "C" __global__ void cudalens_absmax_f16(const __half* x, u64 n, u64* out)
{ abs_max(x, n, out); }
extern "C" __global__ void cudalens_absmax_f32(const float* x, u64 n, u64* out)
{ abs_max(x, n, out); }
extern "C" __global__ void cudalens_absmax_f64(const double* x, u64 n, u64* out)
{ abs_max(x, n, out); }

// Elements not equal to x[0] as doubles, NaN equal to NaN (compare.is_constant).
template <typename T>
__device__ void unlike_first(const T* x, u64 n, u64* bad)
{
    u64 stride = (u64)gridDim.x * blockDim.x;
    double first = as_double(x[0]);
    u64 count = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += stride) {
        double v = as_double(x[i]);
        count += !(v == first || (isnan(v) && isnan(first)));
    }
    if (count) atomicAdd(bad, count);
}

extern "C" __global__ void cudalens_unlike_first_f16(const __half* x, u64 n, u64* bad)
{ unlike_first(x, n, bad); }
extern "C" __global__ void cudalens_unlike_first_f32(const float* x, u64 n, u64* bad)
{ unlike_first(x, n, bad); }
extern "C" __global__ void cudalens_unlike_first_f64(const double* x, u64 n, u64* bad)
{ unlike_first(x, n, bad); }
"""

_FLOAT_KERNELS = {"float16": "f16", "float32": "f32", "float64": "f64"}
BLOCK = 256


def screen_source() -> str:
    """The screen kernels' CUDA source with the poison patterns of ``patterns`` filled in."""
    h = FLOAT_POISON_HALFWORD
    defines = (f"#define POISON16 0x{h:04X}u\n"
               f"#define POISON32 0x{h:04X}{h:04X}u\n"
               f"#define POISON64 0x{h:04X}{h:04X}{h:04X}{h:04X}ull\n")
    return defines + SCREEN_SOURCE


class DeviceScreen:
    """The screen kernels loaded into ``session``'s context (module doc). Raises
    ``RuntimeError`` when they do not compile."""

    def __init__(self, session):
        from pycuda.compiler import compile as nvcc_compile  # noqa: PLC0415 (optional dependency)

        self.drv, self.session = session.drv, session
        major, minor = session.device.compute_capability()
        try:
            cubin = nvcc_compile(screen_source(), no_extern_c=True, arch=f"sm_{major}{minor}")
        except self.drv.CompileError as e:
            raise RuntimeError(f"the verification screen kernels did not compile: {e}") from e
        names = (["cudalens_screen_bits"] + [f"cudalens_screen_{k}" for k in _FLOAT_KERNELS.values()]
                 + [f"cudalens_absmax_{k}" for k in _FLOAT_KERNELS.values()]
                 + [f"cudalens_unlike_first_{k}" for k in _FLOAT_KERNELS.values()])
        self._fn = {n: session.load(cubin, find_kernel_symbol(cubin, n)) for n in names}
        sm = int(session.device.get_attribute(self.drv.device_attribute.MULTIPROCESSOR_COUNT))
        self.grid = (max(1, sm) * 8, 1, 1)
        self.word = self.drv.mem_alloc(8)
        self.host = np.zeros(1, dtype=np.uint64)

    def _run(self, name: str, *args) -> int:
        self.drv.memset_d8(self.word, 0, 8)
        self._fn[name](*args, np.uintp(int(self.word)), grid=self.grid, block=(BLOCK, 1, 1),
                       shared=0, stream=self.session.stream)
        self.drv.memcpy_dtoh_async(self.host, self.word, self.session.stream)
        self.session.stream.synchronize()
        return int(self.host[0])

    def differing_bytes(self, a: int, b: int, nbytes: int) -> int:
        """How many of the ``nbytes`` bytes at device addresses ``a`` and ``b`` differ
        (4-byte words count once)."""
        if nbytes == 0:
            return 0
        return self._run("cudalens_screen_bits", np.uintp(a), np.uintp(b), np.uint64(nbytes))

    def flagged(self, ref: int, cand: int, dtype: str, length: int, bounds: Bounds) -> int:
        """How many of ``length`` elements of ``dtype`` at ``cand`` the host would flag as
        unwritten or mismatching against ``ref`` under ``bounds`` (a superset for integers:
        any differing bits)."""
        if length == 0:
            return 0
        if dtype not in _FLOAT_KERNELS:  # bfloat16, float8: any differing byte goes to the host
            return self.differing_bytes(ref, cand, length * elements.itemsize(dtype))
        if not is_float(dtype) or bounds.exact:
            return self.differing_bytes(ref, cand, length * np.dtype(dtype).itemsize)
        return self._run(f"cudalens_screen_{_FLOAT_KERNELS[dtype]}", np.uintp(ref),
                         np.uintp(cand), np.uint64(length), np.float64(bounds.atol),
                         np.float64(bounds.rtol))

    def abs_max(self, ptr: int, dtype: str, length: int) -> float:
        """max |x| over the finite elements of the float buffer at ``ptr`` (0.0 if none)."""
        if length == 0:
            return 0.0
        bits = self._run(f"cudalens_absmax_{_FLOAT_KERNELS[dtype]}", np.uintp(ptr),
                         np.uint64(length))
        return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])

    def unlike_first(self, ptr: int, dtype: str, length: int) -> int:
        """How many of ``length`` elements of the float buffer at ``ptr`` differ from its
        first element (0: the buffer is constant; see ``compare.is_constant``)."""
        if length < 2:
            return 0
        return self._run(f"cudalens_unlike_first_{_FLOAT_KERNELS[dtype]}", np.uintp(ptr),
                         np.uint64(length))

    def free(self) -> None:
        try:
            self.word.free()
        except self.drv.Error:
            pass

