"""Device facts and the measured copy bandwidth that achieved bandwidth is compared with.

Static facts come from the CUDA driver's device attributes (through pycuda). The driver's
version string and the current clocks come from NVML (``pynvml``, package ``nvidia-ml-py``)
when it imports; otherwise the driver API version (e.g. ``13.0``) and the attributes'
maximum clocks are reported. Clocks are read right after the bandwidth measurement, while the
GPU is still in its working state rather than idle.

The copy bandwidth is measured, not taken from a datasheet (the device tool's METHOD.md, "Two
numbers first"), and measured the way kernels are timed (``copy_bandwidth``, method ``flushed``):
the highest of three 16-byte kernels (copy, vector add, read only; ``copy_kernels``) over
buffers of 2 x L2 each, after the same read flush of the L2 and between the same CUDA events as
a timed kernel, median of ``COPY_REPEATS`` launches after ``COPY_WARMUP``, counting the bytes
read plus the bytes written (on an H200, 2026-12-01: copy 4,228, add 4,388, read 4,126 GB/s). Until 2026-12 the
copy was timed back to back (the faster of ``cuMemcpyDtoDAsync`` and that kernel): it paid for
the previous copy's dirty L2 lines while kernels, timed after a read flush, leave theirs unpaid,
and vector add and saxpy read 107-110% of it on an H200.
"""

from __future__ import annotations

import statistics

from gpu_runner.copy_kernels import attribute, copy_kernel
from gpu_runner.report import DeviceInfo

COPY_BYTES_MIN = 256 * 1024 * 1024
COPY_REPEATS = 10
COPY_WARMUP = 2


def measure_copy_bandwidth(session, nbytes: int = 0) -> float:
    """Device-to-device copy bandwidth in GB/s (10^9 bytes/s), bytes read + written, timed as
    kernels are (``copy_bandwidth.measure_copy``, method ``flushed``).

    ``nbytes`` per buffer defaults to max(64 MiB, 2 x L2), reduced to fit a quarter of the free
    memory. Needs the session's context current. Raises ``RuntimeError`` when fewer than 16 MiB
    can be allocated, a kernel does not compile, or the events read no elapsed time.
    """
    from gpu_runner.copy_bandwidth import measure_copy  # noqa: PLC0415

    return measure_copy(session, nbytes=nbytes, methods=("flushed",),
                        repeats=COPY_REPEATS, warmup=COPY_WARMUP).gbps["flushed"]


def measure_copy_back_to_back(session, nbytes: int = 0) -> float:
    """The copy bandwidth as it was measured until 2026-12 (module doc), in GB/s, for
    comparison (``benchmarks/bench_copy_bandwidth.py``). ``nbytes`` per buffer defaults to
    max(256 MiB, 4 x L2). Raises as ``measure_copy_bandwidth``."""
    drv = session.drv
    l2 = attribute(drv, session.device, "L2_CACHE_SIZE")
    free, _total = drv.mem_get_info()
    size = nbytes or max(COPY_BYTES_MIN, 4 * l2)
    size = min(size, free // 4) // 4096 * 4096
    if size < 16 * 1024 * 1024:
        raise RuntimeError(f"copy bandwidth: expected at least 16 MiB of free device memory per "
                           f"buffer, found {free // 4} bytes")
    src = drv.mem_alloc(size)
    dst = drv.mem_alloc(size)
    stream = session.stream
    try:
        drv.memset_d32_async(src, 0x3F800000, size // 4, stream)  # 1.0f: not zeros
        start, end = drv.Event(), drv.Event()
        kernel = copy_kernel(session)
        count = size // 16
        copies = [lambda: drv.memcpy_dtod_async(dst, src, size, stream)]
        if kernel is not None:
            import numpy as np  # noqa: PLC0415

            copies.append(lambda: kernel(np.uintp(int(src)), np.uintp(int(dst)), np.uint64(count),
                                         grid=((count + 255) // 256, 1, 1), block=(256, 1, 1),
                                         shared=0, stream=stream))
        medians = []
        for copy in copies:
            times_ms = []
            for i in range(COPY_WARMUP + COPY_REPEATS):
                start.record(stream)
                copy()
                end.record(stream)
                end.synchronize()
                if i >= COPY_WARMUP:
                    times_ms.append(end.time_since(start))
            medians.append(statistics.median(times_ms))
    finally:
        stream.synchronize()
        src.free()
        dst.free()
    ms = min(medians)
    if ms <= 0:
        raise RuntimeError(f"copy bandwidth: a {size}-byte copy was timed at {ms} ms; expected a "
                           f"positive duration")
    return 2 * size / (ms * 1e-3) / 1e9


def _nvml_facts(pci_bus_id: str) -> tuple[str, int, int]:
    """(driver version, SM clock MHz, memory clock MHz) from NVML, or ("", 0, 0)."""
    try:
        import pynvml  # noqa: PLC0415 (optional)
    except ImportError:
        return "", 0, 0
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 (NVML library missing or unusable: fall back)
        return "", 0, 0
    try:
        version = pynvml.nvmlSystemGetDriverVersion()
        if isinstance(version, bytes):
            version = version.decode()
        try:
            handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
            sm = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
            mem = pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)
        except Exception:  # noqa: BLE001 (device not visible to NVML, e.g. in a container)
            sm = mem = 0
        return str(version), int(sm), int(mem)
    except Exception:  # noqa: BLE001
        return "", 0, 0
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def device_info(session, copy_bandwidth_gbps: float = 0.0) -> DeviceInfo:
    """``DeviceInfo`` of the session's device, measuring the copy bandwidth unless given.
    Needs the session's context current."""
    drv, dev = session.drv, session.device
    if not copy_bandwidth_gbps:
        copy_bandwidth_gbps = measure_copy_bandwidth(session)
    api = int(drv.get_driver_version())
    version, sm_mhz, mem_mhz = _nvml_facts(dev.pci_bus_id())
    shared = attribute(drv, dev, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN") or \
        attribute(drv, dev, "MAX_SHARED_MEMORY_PER_BLOCK")
    return DeviceInfo(
        name=dev.name(),
        compute_capability=tuple(dev.compute_capability()),
        sm_count=attribute(drv, dev, "MULTIPROCESSOR_COUNT"),
        l2_bytes=attribute(drv, dev, "L2_CACHE_SIZE"),
        max_threads_per_block=attribute(drv, dev, "MAX_THREADS_PER_BLOCK"),
        max_shared_bytes_per_block=shared,
        sm_clock_mhz=sm_mhz or attribute(drv, dev, "CLOCK_RATE") // 1000,
        memory_clock_mhz=mem_mhz or attribute(drv, dev, "MEMORY_CLOCK_RATE") // 1000,
        driver_version=version or f"{api // 1000}.{api % 1000 // 10}",
        cuda_driver_api=api,
        copy_bandwidth_gbps=copy_bandwidth_gbps,
    )
