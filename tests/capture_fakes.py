"""Recorder output written by hand, as ``recorder.cpp`` writes it, for tests without a GPU.

``write_saxpy_record`` records a launch of ``saxpy(int n, float a, const float* x, float* y)``
with ``x`` and ``y`` in one allocation (as PyTorch's caching allocator places tensors): ``x``
at offset 0, ``y`` at offset ``4 * n``, and ``y = a * x + y`` applied between before and after.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

SAXPY_CU = """__global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
BASE = 0x7F0000000000
MANGLED = "_Z5saxpyifPKfPf"
DEMANGLED = "saxpy(int, float, float const*, float*)"


def saxpy_arrays(n: int):
    x = np.arange(n, dtype=np.float32) / 4
    y = np.full(n, 2.0, dtype=np.float32)
    return x, y, (np.float32(3.0) * x + y).astype(np.float32)


def write_saxpy_record(out: Path, n: int = 1000, index: int = 0, *, refused: bool = False,
                       truncated: bool = False, launched_extra=("other_kernel(float*)",),
                       counts: bool = True) -> Path:
    x, y, y_after = saxpy_arrays(n)
    k = out / f"k4242.{index}"
    k.mkdir(parents=True)
    size = 8 * n + 256  # the allocation holds x, y and 256 bytes of something else
    tail = bytes(range(256))
    before = x.tobytes() + y.tobytes() + tail
    after = x.tobytes() + y_after.tobytes() + tail
    params = [struct.pack("<i", n), struct.pack("<f", 3.0), struct.pack("<Q", BASE),
              struct.pack("<Q", BASE + 4 * n)]
    lines = [f"kernel {MANGLED}", f"demangled {DEMANGLED}", "launch_index 1",
             "api cuLaunchKernel", f"grid {(n + 255) // 256} 1 1", "block 256 1 1", "shared 0"]
    offsets = [0, 4, 8, 16]
    lines += [f"param {i} {o} {len(p)} {p.hex()}" for i, (o, p) in enumerate(zip(offsets, params))]
    lines += [f"alloc 0 {BASE} {size}", "pointer 2 0 0", f"pointer 3 0 {4 * n}",
              f"total_bytes {2 * size}"]
    if refused:
        lines += [f"refused {2 * size} 100", "end"]
    else:
        (k / "a0.before.bin").write_bytes(before)
        (k / "a0.after.bin").write_bytes(after)
        if not truncated:
            lines.append("end")
    (k / "meta.txt").write_text("\n".join(lines) + "\n")
    names = [(MANGLED, DEMANGLED)] + [(f"_Z{i}", d) for i, d in enumerate(launched_extra)]
    (out / "launched.tsv").write_text("".join(f"{m}\t{d}\n" for m, d in names))
    if counts:
        (out / "counts.4242.tsv").write_text("".join(f"1\t{m}\n" for m, _ in names))
    (out / "ready.txt").write_text("ready\n")
    return k
