"""The copy bandwidth that kernels' achieved bandwidth is compared with, measured the way kernels
are timed.

Kernels are timed after a read flush of the L2 (``l2flush``: it leaves only clean lines), between
two CUDA events on one stream (``timing``). Their last writes can still sit in the L2, dirty, when
the end event fires: that write-back is not in their time. A copy timed back to back (the method
before this module) pays for the previous copy's dirty lines instead, so kernels read up to
107-110% of it on an H200 (README, "of copy bw above 100%"). The methods here (``METHODS``):

* ``flushed`` (the reference, ``DeviceInfo.copy_bandwidth_gbps``): the highest of three
  16-byte kernels (``copy_kernels.COPY_KERNEL_SOURCE``) of different read:write mixes, each timed
  exactly as a kernel is (read flush, event, kernel, event; the median of ``repeats``): the copy
  (1:1, ``flushed_copy``), a vector add (2:1, ``flushed_add``) and a read-only kernel (1:0,
  ``flushed_read``). One mix is not a ceiling for the others: DRAM reads cost less than writes,
  so on an H200 (2026-12-01) a float4 saxpy, two reads per write, moved 104% of the copy's
  bytes per second. The highest of the three bounds a kernel of any of these mixes. Its dirty lines are free as a kernel's are. The buffers are
  ``2 x L2`` each (at least 64 MiB), so up to a quarter of the copy's traffic can be left in
  the L2 (its writes of at most L2 bytes out of ``4 x L2`` moved): as large a share as for any
  kernel that moves ``4 x L2`` bytes or more, which is what makes it an upper bound for them.
* ``written_back``: the same copy followed by a second read flush of ``2 x L2`` inside the
  events, minus the median time of that flush alone (timed the same way, interleaved): the copy
  including the write-back of every line it dirtied, i.e. what DRAM sustains.
* ``back_to_back``: the old measurement (the faster of ``cuMemcpyDtoDAsync`` and the copy
  kernel, launches back to back, no flush), for comparison only.

Bandwidth counts bytes read plus bytes written, in GB/s (10^9 bytes/s).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable, Optional

METHODS = ("flushed", "written_back", "back_to_back")
# The read:write mixes behind ``flushed``: (name, 16-byte reads, 16-byte writes) per element.
MIXES = (("copy", 1, 1), ("add", 2, 1), ("read", 1, 0))
MIN_BYTES = 64 * 1024 * 1024
REPEATS = 10
WARMUP = 2


@dataclass(frozen=True)
class CopyBandwidth:
    """One measurement: ``gbps`` by method (those that were measured), the buffer size in
    bytes, and the medians in milliseconds they came from (``flush_ms``: the flush alone)."""

    size_bytes: int
    gbps: dict[str, float]
    median_ms: dict[str, float]
    flush_ms: float = 0.0


def gbps(size_bytes: int, ms: float) -> float:
    """GB/s of a copy of ``size_bytes`` (read + written: twice that) in ``ms`` milliseconds.
    Raises ``ValueError`` for a time that is not positive."""
    if not ms > 0:
        raise ValueError(f"copy bandwidth: a {size_bytes}-byte copy was timed at {ms} ms; "
                         f"expected a positive duration")
    return 2 * size_bytes / (ms * 1e-3) / 1e9


def mix_gbps_of(size_bytes: int, reads: int, writes: int, ms: float) -> float:
    """GB/s of a kernel that reads ``reads`` and writes ``writes`` buffers of ``size_bytes`` in
    ``ms`` milliseconds. Raises ``ValueError`` for a time that is not positive."""
    if not ms > 0:
        raise ValueError(f"copy bandwidth: a {reads}:{writes} kernel over {size_bytes} bytes "
                         f"was timed at {ms} ms; expected a positive duration")
    return (reads + writes) * size_bytes / (ms * 1e-3) / 1e9


def written_back_ms(with_flush_ms: float, flush_only_ms: float) -> float:
    """The copy's time including its write-back: (copy + flush) minus the flush alone.
    Raises ``ValueError`` when that is not positive (the flush alone took as long)."""
    ms = with_flush_ms - flush_only_ms
    if not ms > 0:
        raise ValueError(f"copy bandwidth: copy + flush took {with_flush_ms:.4g} ms and the flush "
                         f"alone {flush_only_ms:.4g} ms; expected the copy to add time")
    return ms


def copy_size(l2_bytes: int, free_bytes: int, nbytes: int = 0) -> int:
    """Bytes per buffer: ``nbytes`` or max(64 MiB, 2 x L2), within a quarter of the free memory,
    a multiple of 4096. Raises ``RuntimeError`` below 16 MiB."""
    size = nbytes or max(MIN_BYTES, 2 * l2_bytes)
    size = min(size, free_bytes // 4) // 4096 * 4096
    if size < 16 * 1024 * 1024:
        raise RuntimeError(f"copy bandwidth: expected at least 16 MiB of free device memory per "
                           f"buffer, found {free_bytes // 4} bytes")
    return size


def _timed(drv, stream, steps: list[Callable[[], None]], before: Optional[Callable[[], None]],
           repeats: int, warmup: int) -> list[float]:
    """Milliseconds between two events around ``steps``, ``before`` enqueued ahead of the start
    event each time; ``warmup`` untimed first."""
    start, end = drv.Event(), drv.Event()
    out = []
    for i in range(warmup + repeats):
        if before is not None:
            before()
        start.record(stream)
        for step in steps:
            step()
        end.record(stream)
        end.synchronize()
        if i >= warmup:
            out.append(end.time_since(start))
    return out


def measure_copy(session, *, nbytes: int = 0, methods: tuple[str, ...] = ("flushed",),
                 repeats: int = REPEATS, warmup: int = WARMUP) -> CopyBandwidth:
    """Measures ``methods`` (see the module doc) on the session's device. Needs the session's
    context current. Raises ``ValueError`` for an unknown method, ``RuntimeError`` when the copy
    or flush kernel does not compile, too little memory is free, or a time is not positive."""
    import numpy as np  # noqa: PLC0415

    from gpu_runner.copy_kernels import attribute, copy_kernel  # noqa: PLC0415
    from gpu_runner.l2flush import L2Flusher  # noqa: PLC0415

    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise ValueError(f"copy bandwidth: unknown method(s) {bad}; expected some of {METHODS}")
    drv, stream = session.drv, session.stream
    l2 = attribute(drv, session.device, "L2_CACHE_SIZE")
    free, _total = drv.mem_get_info()
    size = copy_size(l2, free, nbytes)
    kernel = copy_kernel(session)
    if kernel is None:
        raise RuntimeError("copy bandwidth: the 16-byte copy kernel did not compile")
    add_kernel = copy_kernel(session, "cudalens_mix_add")
    read_kernel = copy_kernel(session, "cudalens_mix_read")
    if add_kernel is None or read_kernel is None:
        raise RuntimeError("copy bandwidth: the 16-byte add or read kernel did not compile")
    src, dst = drv.mem_alloc(size), drv.mem_alloc(size)
    src2 = drv.mem_alloc(size) if "flushed" in methods else None
    flusher = None
    try:
        drv.memset_d32_async(src, 0x3F800000, size // 4, stream)  # 1.0f: not zeros
        if src2 is not None:
            drv.memset_d32_async(src2, 0x3F800000, size // 4, stream)
        flusher = L2Flusher(session, l2, "read")
        count = size // 16

        def copy() -> None:
            kernel(np.uintp(int(src)), np.uintp(int(dst)), np.uint64(count),
                   grid=((count + 255) // 256, 1, 1), block=(256, 1, 1), shared=0, stream=stream)

        def flush() -> None:
            flusher.flush(stream)

        grid = ((count + 255) // 256, 1, 1)

        def add() -> None:
            add_kernel(np.uintp(int(src)), np.uintp(int(src2)), np.uintp(int(dst)),
                       np.uint64(count), grid=grid, block=(256, 1, 1), shared=0, stream=stream)

        def read() -> None:
            read_kernel(np.uintp(int(src)), np.uintp(int(dst)), np.uint64(count), grid=grid,
                        block=(256, 1, 1), shared=0, stream=stream)

        medians: dict[str, float] = {}
        flush_ms = 0.0
        mix_gbps: dict[str, float] = {}
        if "flushed" in methods:
            for (name, reads, writes), step in zip(MIXES, (copy, add, read)):
                ms = statistics.median(_timed(drv, stream, [step], flush, repeats, warmup))
                medians[f"flushed_{name}"] = ms
                try:
                    mix_gbps[f"flushed_{name}"] = mix_gbps_of(size, reads, writes, ms)
                except ValueError as exc:
                    raise RuntimeError(str(exc)) from None
            best = max(mix_gbps, key=mix_gbps.get)
            mix_gbps["flushed"] = mix_gbps[best]
            medians["flushed"] = medians[best]
        if "written_back" in methods:
            with_flush, alone = [], []
            _timed(drv, stream, [copy, flush], flush, 0, warmup)
            for _ in range(repeats):  # interleaved, so drift hits both alike
                with_flush += _timed(drv, stream, [copy, flush], flush, 1, 0)
                alone += _timed(drv, stream, [flush], flush, 1, 0)
            flush_ms = statistics.median(alone)
            medians["written_back"] = written_back_ms(statistics.median(with_flush), flush_ms)
        if "back_to_back" in methods:
            driver = statistics.median(_timed(
                drv, stream, [lambda: drv.memcpy_dtod_async(dst, src, size, stream)], None,
                repeats, warmup))
            own = statistics.median(_timed(drv, stream, [copy], None, repeats, warmup))
            medians["back_to_back"] = min(driver, own)
    finally:
        stream.synchronize()
        if flusher is not None:
            flusher.free()
        src.free()
        dst.free()
        if src2 is not None:
            src2.free()
    try:
        found = {m: gbps(size, ms) for m, ms in medians.items() if not m.startswith("flushed")}
        return CopyBandwidth(size, {**found, **mix_gbps}, medians, flush_ms)
    except ValueError as exc:
        raise RuntimeError(str(exc)) from None
