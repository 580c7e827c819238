"""Where a kernel's time goes, from a measurement: roofline position and theoretical occupancy.

Roofline (Williams, Waterman, Patterson, "Roofline: an insightful visual performance model",
CACM 2009): a kernel that does F floating-point operations while moving B bytes has an
arithmetic intensity I = F / B. With a memory bandwidth peak P_mem and a compute peak
P_flop, the ridge point is P_flop / P_mem: below it the kernel is memory-bound (at best
I * P_mem), above it compute-bound. The bandwidth peak used here is the device-to-device
copy bandwidth the runner measured on the same GPU (``DeviceInfo.copy_bandwidth_gbps``).
The FP32 peak is 2 (an FMA counts two operations) x FP32 lanes per SM x SMs x SM clock
(``cudalens.gpu_peaks``, the one place the compute peaks and their sources are kept).

Occupancy: resident warps per SM over the maximum, limited by the block size, registers and
shared memory: the model and table of ``cudalens.occupancy`` (the CUDA C++
Programming Guide's limits per compute capability and the CUDA Occupancy Calculator's
allocation rules; the search prunes with the same numbers). It is the
theoretical occupancy, not the achieved one (that needs a profiler: ``profile_summary``
words the achieved occupancy, DRAM throughput and main stall reasons that Nsight Compute
measured, ``gpu_runner.ncu_csv``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from cudalens.gpu_peaks import fp32_peak_gflops
from cudalens.occupancy import Occupancy, limits_for_capability
from cudalens.occupancy import occupancy as occupancy_on

__all__ = ["Occupancy", "occupancy", "fp32_peak_gflops", "Roofline", "roofline",
           "profile_summary"]


def occupancy(cc: tuple[int, int], threads_per_block: int, registers: int,
              shared_bytes: int) -> Optional[Occupancy]:
    """Theoretical occupancy of a launch on compute capability ``cc`` (the one model,
    ``cudalens.occupancy``); None for a capability not in its table or a block of no
    threads. ``registers`` per thread, ``shared_bytes`` per block (static + dynamic)."""
    limits = limits_for_capability(tuple(cc))
    if limits is None or threads_per_block <= 0:
        return None
    return occupancy_on(threads_per_block, max(registers, 0), max(shared_bytes, 0), limits)


@dataclass(frozen=True)
class Roofline:
    """Arithmetic intensity (FLOP/byte), the ridge point (FLOP/byte), the bound, and the
    share of that bound's peak the kernel reached (percent)."""

    intensity: float
    ridge: float
    bound: str  # "memory" or "compute"
    percent_of_bound: float


def roofline(flops: int, bytes_moved: int, median_us: float, copy_gbps: float,
             peak_gflops: Optional[float]) -> Optional[Roofline]:
    """Roofline position of one launch; None without FLOPs, bytes, time or peaks."""
    if flops <= 0 or bytes_moved <= 0 or median_us <= 0 or copy_gbps <= 0 or not peak_gflops:
        return None
    intensity = flops / bytes_moved
    ridge = peak_gflops / copy_gbps
    gflops = flops / (median_us * 1e3)
    if intensity < ridge:
        attainable = intensity * copy_gbps
        bound = "memory"
    else:
        attainable = peak_gflops
        bound = "compute"
    return Roofline(intensity=intensity, ridge=ridge, bound=bound,
                    percent_of_bound=100.0 * gflops / attainable)


def _share(pct: float) -> str:
    return "<1%" if 0 < pct < 0.5 else f"{pct:.0f}%"


def profile_summary(profile) -> str:
    """A ``gpu_runner.ncu_csv.Profile`` in a few words: ``achieved occupancy 62%, DRAM
    throughput 81% of peak, main stalls: long scoreboard 41%, wait 20%`` (each stall reason's
    share of all stall cycles Nsight Compute reported; the largest first)."""
    stalls = ", ".join(f"{s.reason} {_share(s.share_pct)}" for s in profile.stalls)
    return (f"achieved occupancy {profile.achieved_occupancy_pct:.0f}%, DRAM throughput "
            f"{profile.dram_throughput_pct:.0f}% of peak, main stalls: "
            f"{stalls or 'none reported'}")
