"""The roofline check: is a measured time physically possible for the work the spec describes?

A kernel cannot finish faster than the bytes it must move allow at the bandwidth this GPU
measurably moves (Williams, Waterman & Patterson 2009, "Roofline: an insightful visual
performance model for multicore architectures", CACM 52(4)), nor faster than its floating-point
operations allow at peak, when the peak is known. A time below that floor says the timing
missed work (a side stream, work left for the next launch, an event recorded too early), not
that the kernel is fast, so such a result is flagged and not offered as a win.

The floor is kept conservative, so a legitimate kernel is never flagged:

- Bytes: ``Case.bytes_moved`` (each input read once, each output written once), less the
  bytes of ``out`` and ``inout`` buffers that can stay dirty in L2 when the end event fires
  (up to the L2 size; all of them when the L2 size is not given), over the measured copy
  bandwidth (``DeviceInfo.copy_bandwidth_gbps``, bytes read + written per second).
- FLOPs: ``Case.flops`` over ``peak_gflops`` when given (0: unknown, no FLOP floor; a peak
  from the FP32 pipes would wrongly flag a kernel that uses tensor cores).
- Slack: flagged only when the median is below ``ROOFLINE_SLACK`` times the floor, for the
  copy measurement's own spread (on an H200, three processes measured 3,992 to 4,075 GB/s,
  README) and kernels that move data slightly better than the copy does.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_runner.problem import Buffer, Case

ROOFLINE_SLACK = 0.9


@dataclass(frozen=True)
class RooflineCheck:
    """``floor_us``: the least time the work allows (0.0 when nothing is known);
    ``above``: the median is below ``ROOFLINE_SLACK * floor_us``; ``note``: one sentence."""

    floor_us: float
    above: bool
    note: str


def written_bytes(case: Case) -> int:
    """Bytes of the case's ``out`` and ``inout`` buffers."""
    return sum(a.nbytes for a in case.args if isinstance(a, Buffer) and a.role in ("out", "inout"))


def roofline_floor_us(case: Case, copy_bandwidth_gbps: float, *, l2_bytes: int | None = None,
                      peak_gflops: float = 0.0) -> float:
    """The least time in microseconds ``case``'s work allows (see the module doc); 0.0 when
    neither a bandwidth nor a peak is known. Raises ``ValueError`` for negative inputs."""
    if copy_bandwidth_gbps < 0 or peak_gflops < 0 or (l2_bytes is not None and l2_bytes < 0):
        raise ValueError(f"expected non-negative bandwidth, peak and L2 size, found "
                         f"{copy_bandwidth_gbps} GB/s, {peak_gflops} GFLOP/s, {l2_bytes} bytes")
    floor = 0.0
    if copy_bandwidth_gbps > 0 and case.bytes_moved > 0:
        writes = written_bytes(case)
        absorbed = writes if l2_bytes is None else min(writes, l2_bytes)
        must_move = max(0, case.bytes_moved - absorbed)
        floor = must_move / (copy_bandwidth_gbps * 1e3)  # bytes / (bytes per us)
    if peak_gflops > 0 and case.flops > 0:
        floor = max(floor, case.flops / (peak_gflops * 1e3))
    return floor


def check(median_us: float, case: Case, copy_bandwidth_gbps: float, *,
          l2_bytes: int | None = None, peak_gflops: float = 0.0) -> RooflineCheck:
    """The roofline verdict on a median of ``median_us`` microseconds for ``case``."""
    floor = roofline_floor_us(case, copy_bandwidth_gbps, l2_bytes=l2_bytes,
                              peak_gflops=peak_gflops)
    if floor <= 0:
        return RooflineCheck(0.0, False, "no roofline: the spec gives no bytes moved or FLOPs, or "
                                         "no bandwidth was measured")
    above = median_us < ROOFLINE_SLACK * floor
    if above:
        note = (f"median {median_us:.3g} us is below {ROOFLINE_SLACK:g} x the roofline floor "
                f"{floor:.3g} us that the spec's bytes and FLOPs allow on this GPU; the timing "
                f"missed work, so it is not a speedup")
    else:
        note = f"within the roofline: floor {floor:.3g} us, median {median_us:.3g} us"
    return RooflineCheck(floor, above, note)
