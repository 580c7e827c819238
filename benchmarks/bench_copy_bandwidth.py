"""Copy bandwidth, old and new, and what elementwise kernels read as a percentage of each, in one
process on one GPU (issue 11, item 5).

Measures the copy (``gpu_runner.copy_bandwidth``) by

* ``back_to_back``: the old method (``device.measure_copy_back_to_back``: the faster of the
  driver's copy and the 16-byte copy kernel, 256 MiB buffers, launches back to back);
* ``flushed``: the new reference (``device.measure_copy_bandwidth``): the 16-byte copy kernel
  after a read flush, between events, buffers of 2 x L2; also at 256 MiB buffers, for the size
  dependence;
* ``written_back``: the same copy plus a second flush inside the events, minus the flush alone;

then times saxpy, vector add, a float4 saxpy and a 16-byte copy candidate on 2^25 elements (the
examples' size) the runner's way (``l2flush`` read flush, event, kernel, event; median of
``REPS``), and the same launch followed by a flush minus the flush alone (``+wb``: with its
write-back). It prints each kernel's GB/s and its percentage of every copy figure, and says
which method ``DeviceInfo.copy_bandwidth_gbps`` uses now.

Usage, on the GPU machine, from the repository root (about 30-60 s):
    python benchmarks/bench_copy_bandwidth.py [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

N = 1 << 25
BLOCK = 256
REPS = 30
WARMUP = 3

KERNELS = r"""
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void vector_add(int n, const float* a, const float* b, float* c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" __global__ void saxpy4(int n, float a, const float4* x, float4* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 4) {
        float4 u = x[i], v = y[i];
        v.x = a * u.x + v.x; v.y = a * u.y + v.y; v.z = a * u.z + v.z; v.w = a * u.w + v.w;
        y[i] = v;
    }
}
extern "C" __global__ void copy16(int n, const int4* __restrict__ src, int4* __restrict__ dst)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 4) dst[i] = src[i];
}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()

    import numpy as np
    from pycuda.compiler import compile as nvcc_compile

    from gpu_runner.copy_bandwidth import measure_copy, written_back_ms
    from gpu_runner.cubin import find_kernel_symbol
    from gpu_runner.device import attribute, measure_copy_back_to_back, measure_copy_bandwidth
    from gpu_runner.l2flush import L2Flusher
    from gpu_runner.session import GpuSession

    session = GpuSession(0)
    out: dict = {}
    with session.active():
        drv, stream = session.drv, session.stream
        l2 = attribute(drv, session.device, "L2_CACHE_SIZE")
        name = session.device.name()
        copies = {"back_to_back (old, 256 MiB)": measure_copy_back_to_back(session)}
        new = measure_copy(session, methods=("flushed", "written_back"))
        copies[f"flushed ({new.size_bytes >> 20} MiB, the reference now)"] = \
            new.gbps["flushed"]
        for mix in ("copy", "add", "read"):  # the read:write mixes the reference is the best of
            copies[f"  flushed_{mix} ({new.size_bytes >> 20} MiB)"] = new.gbps[f"flushed_{mix}"]
        copies[f"written_back ({new.size_bytes >> 20} MiB)"] = new.gbps["written_back"]
        big = measure_copy(session, nbytes=256 << 20, methods=("flushed", "written_back"))
        copies["flushed (256 MiB)"] = big.gbps["flushed"]
        copies["written_back (256 MiB)"] = big.gbps["written_back"]
        reference = measure_copy_bandwidth(session)
        copies["device.measure_copy_bandwidth (again)"] = reference

        major, minor = session.device.compute_capability()
        cubin = nvcc_compile(KERNELS, no_extern_c=True, arch=f"sm_{major}{minor}")
        fn = {k: session.load(cubin, find_kernel_symbol(cubin, k))
              for k in ("saxpy", "vector_add", "saxpy4", "copy16")}
        rng = np.random.default_rng(1)
        a = drv.to_device(rng.uniform(-1, 1, N).astype(np.float32))
        b = drv.to_device(rng.uniform(-1, 1, N).astype(np.float32))
        c = drv.mem_alloc(4 * N)
        flusher = L2Flusher(session, l2, "read")
        grid1 = ((N + BLOCK - 1) // BLOCK, 1, 1)
        grid4 = ((N // 4 + BLOCK - 1) // BLOCK, 1, 1)
        i32, f32 = np.int32, np.float32
        launches = {  # name: (launch, bytes moved, bytes written)
            "saxpy": (lambda: fn["saxpy"](i32(N), f32(2.5), a, b, block=(BLOCK, 1, 1),
                                          grid=grid1, stream=stream), 12 * N, 4 * N),
            "vector add": (lambda: fn["vector_add"](i32(N), a, b, c, block=(BLOCK, 1, 1),
                                                    grid=grid1, stream=stream), 12 * N, 4 * N),
            "saxpy float4": (lambda: fn["saxpy4"](i32(N), f32(2.5), a, b, block=(BLOCK, 1, 1),
                                                  grid=grid4, stream=stream), 12 * N, 4 * N),
            "copy 16-byte": (lambda: fn["copy16"](i32(N), a, c, block=(BLOCK, 1, 1),
                                                  grid=grid4, stream=stream), 8 * N, 4 * N),
        }

        def timed(steps) -> float:
            start, end = drv.Event(), drv.Event()
            flusher.flush(stream)
            start.record(stream)
            for step in steps:
                step()
            end.record(stream)
            end.synchronize()
            return end.time_since(start)

        kernels = {}
        for label, (launch, moved, written) in launches.items():
            for _ in range(WARMUP):
                timed([launch])
            plain, with_wb, alone = [], [], []
            for _ in range(REPS):
                plain.append(timed([launch]))
                with_wb.append(timed([launch, lambda: flusher.flush(stream)]))
                alone.append(timed([lambda: flusher.flush(stream)]))
            ms = statistics.median(plain)
            wb_ms = written_back_ms(statistics.median(with_wb), statistics.median(alone))
            kernels[label] = {"us": ms * 1e3, "gbps": moved / (ms * 1e-3) / 1e9,
                              "us_wb": wb_ms * 1e3, "gbps_wb": moved / (wb_ms * 1e-3) / 1e9,
                              "bytes": moved, "written": written}
        flusher.free()
        for alloc in (a, b, c):
            alloc.free()
    session.close()

    print(f"{name}, L2 {l2 / 1e6:.1f} MB, {N} elements per vector, median of {REPS}")
    print("copy bandwidth (bytes read + written):")
    for label, value in copies.items():
        print(f"  {label:<44} {value:9,.0f} GB/s")
    print("DeviceInfo.copy_bandwidth_gbps uses: flushed (copy_bandwidth.py, 2 x L2 buffers)")
    refs = {"old": copies["back_to_back (old, 256 MiB)"], "flushed": new.gbps["flushed"],
            "flushed 256M": big.gbps["flushed"], "written_back": new.gbps["written_back"]}
    head = "".join(f"{'% ' + r:>15}" for r in refs)
    print(f"\n{'kernel':<14}{'time us':>9}{'GB/s':>8}{head}{'+wb us':>9}{'+wb GB/s':>9}"
          f"{'+wb % wb':>10}")
    for label, k in kernels.items():
        pct = "".join(f"{100 * k['gbps'] / v:>14.1f}%" for v in refs.values())
        print(f"{label:<14}{k['us']:>9.1f}{k['gbps']:>8.0f}{pct}{k['us_wb']:>9.1f}"
              f"{k['gbps_wb']:>9.0f}{100 * k['gbps_wb'] / refs['written_back']:>9.1f}%")
    print("\n'+wb': the kernel followed by a second read flush inside the events, minus the "
          "flush alone: its time including the write-back of the lines it left dirty in L2, "
          "compared with the copy measured the same way (written_back).")
    worst = max(100 * k["gbps"] / refs["flushed"] for k in kernels.values())
    print(f"highest share of the reference (flushed): {worst:.1f}%"
          + ("" if worst <= 100 else "  <-- above 100%: the reference is not an upper bound"))
    if args.json:
        args.json.write_text(json.dumps({"device": name, "l2_bytes": l2, "copies": copies,
                                         "kernels": kernels},
                                        indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
