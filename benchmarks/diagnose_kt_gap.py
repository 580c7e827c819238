"""Why Kernel Tuner's saxpy times differ from the runner's (a diagnostic, not a benchmark).

``bench_runner.py`` on the H200 (2026-11-30) found Kernel Tuner's times for saxpy on 2^22
floats about 1.9x the runner's medians. This times the same kernel (block 256) several ways in
one process with CUDA events around each launch, and prints the medians side by side:

1. back to back on a busy GPU (no flush, no host gap): what L2-warm, clock-warm timing gives;
2. each launch after a read flush of twice the L2 (the runner's way);
3. each launch after the host slept 1 ms (an idle GPU between launches, as a tuner that
   synchronizes and does host work between launches leaves it);
4. Kernel Tuner itself (``tune_kernel``, its default CUDA backend), its per-iteration times.

Usage (on the GPU machine): python benchmarks/diagnose_kt_gap.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]
N = 1 << 22
BLOCK = 256
REPS = 30


def main() -> int:
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as drv
    from pycuda.compiler import SourceModule

    src = (ROOT / "tests/data/runner/saxpy.cu").read_text()
    fn = SourceModule(src).get_function("saxpy")
    rng = np.random.default_rng(1)
    x = drv.to_device(rng.uniform(-1, 1, N).astype(np.float32))
    y = drv.to_device(rng.uniform(-1, 1, N).astype(np.float32))
    z = drv.mem_alloc(4 * N)
    l2 = drv.Context.get_device().get_attribute(drv.device_attribute.L2_CACHE_SIZE)
    flush = drv.mem_alloc(2 * l2)
    flush_fn = SourceModule("""__global__ void rd(const int4* p, size_t n, int* s) {
        int acc = 0; for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
        i += (size_t)gridDim.x * blockDim.x) { int4 v = p[i]; acc ^= v.x ^ v.w; }
        if (acc == 0x7fa5a5a5) s[0] = acc; }""").get_function("rd")
    sink = drv.mem_alloc(16)
    grid = ((N + BLOCK - 1) // BLOCK, 1)

    def once(before=None) -> float:
        if before:
            before()
        a, b = drv.Event(), drv.Event()
        a.record()
        fn(np.int32(N), np.float32(2.5), x, y, z, block=(BLOCK, 1, 1), grid=grid)
        b.record()
        b.synchronize()
        return b.time_since(a) * 1e3

    def do_flush():
        flush_fn(flush, np.uint64(2 * l2 // 16), sink, block=(256, 1, 1), grid=(132 * 4, 1))

    rows = {}
    for _ in range(5):
        once()
    rows["back to back"] = [once() for _ in range(REPS)]
    rows["after an L2 read flush"] = [once(do_flush) for _ in range(REPS)]
    rows["after 1 ms host sleep"] = [once(lambda: time.sleep(0.001)) for _ in range(REPS)]
    rows["after 1 ms sleep, then L2 flush"] = [
        once(lambda: (time.sleep(0.001), do_flush())) for _ in range(REPS)]
    try:
        import kernel_tuner as kt
        zs = np.zeros(N, np.float32)
        res, _ = kt.tune_kernel("saxpy", src, N, [np.int32(N), np.float32(2.5),
                                                  rng.uniform(-1, 1, N).astype(np.float32),
                                                  rng.uniform(-1, 1, N).astype(np.float32), zs],
                                {"block_size_x": [BLOCK]}, lang="CUDA", iterations=REPS,
                                quiet=True, verbose=False)
        times = res[0].get("times") or [res[0]["time"]]
        rows["Kernel Tuner (its times)"] = [t * 1e3 for t in times]
    except Exception as e:  # noqa: BLE001 (diagnostic: report and go on)
        print(f"kernel tuner failed: {e}")
    for name, t in rows.items():
        print(f"{name:34s} median {statistics.median(t):8.2f} us  min {min(t):8.2f}  "
              f"max {max(t):8.2f}  first 5: {[round(v, 1) for v in t[:5]]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
