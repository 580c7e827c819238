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
shared memory, with the per-architecture limits of the CUDA C++ Programming Guide,
"Technical Specifications per Compute Capability", and the allocation rules of NVIDIA's CUDA
Occupancy Calculator (registers allocated per warp in units of 256; shared memory in units
of 128 bytes with 1 KB reserved per block from compute capability 8.0 on). It is the
theoretical occupancy, not the achieved one (that needs a profiler: ``profile_summary``
words the achieved occupancy, DRAM throughput and main stall reasons that Nsight Compute
measured, ``gpu_runner.ncu_csv``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from cudalens.gpu_peaks import fp32_peak_gflops

__all__ = ["SM_LIMITS", "SmLimits", "Occupancy", "occupancy", "fp32_peak_gflops", "Roofline",
           "roofline", "profile_summary"]


@dataclass(frozen=True)
class SmLimits:
    """Per-SM limits of one compute capability. Shared memory in bytes."""

    max_warps: int
    max_blocks: int
    registers: int
    shared_bytes: int  # usable shared memory per SM, at the largest carveout
    reserved_shared_per_block: int
    register_unit: int = 256
    shared_unit: int = 128


# CUDA C++ Programming Guide (12.x), "Technical Specifications per Compute Capability".
SM_LIMITS: dict[tuple[int, int], SmLimits] = {
    (7, 0): SmLimits(64, 32, 65536, 96 * 1024, 0),
    (7, 5): SmLimits(32, 16, 65536, 64 * 1024, 0),
    (8, 0): SmLimits(64, 32, 65536, 164 * 1024, 1024),
    (8, 6): SmLimits(48, 16, 65536, 100 * 1024, 1024),
    (8, 7): SmLimits(48, 16, 65536, 164 * 1024, 1024),
    (8, 9): SmLimits(48, 24, 65536, 100 * 1024, 1024),
    (9, 0): SmLimits(64, 32, 65536, 228 * 1024, 1024),
}


@dataclass(frozen=True)
class Occupancy:
    """Theoretical occupancy: ``blocks`` resident per SM, ``warps`` of ``max_warps``, and
    which limit binds (``"block size"``, ``"registers"``, ``"shared memory"``,
    ``"blocks per SM"``)."""

    blocks: int
    warps: int
    max_warps: int
    limiter: str

    @property
    def percent(self) -> float:
        return 100.0 * self.warps / self.max_warps


def occupancy(cc: tuple[int, int], threads_per_block: int, registers: int,
              shared_bytes: int) -> Optional[Occupancy]:
    """Theoretical occupancy of a launch; None for an unknown compute capability or a block
    of no threads. ``registers`` per thread, ``shared_bytes`` per block (static + dynamic)."""
    limits = SM_LIMITS.get(tuple(cc))
    if limits is None or threads_per_block <= 0:
        return None
    warps_per_block = math.ceil(threads_per_block / 32)
    bounds = {"blocks per SM": limits.max_blocks,
              "block size": limits.max_warps // warps_per_block}
    if registers > 0:
        per_warp = math.ceil(registers * 32 / limits.register_unit) * limits.register_unit
        bounds["registers"] = limits.registers // (per_warp * warps_per_block)
    if shared_bytes > 0:
        per_block = (math.ceil(shared_bytes / limits.shared_unit) * limits.shared_unit
                     + limits.reserved_shared_per_block)
        bounds["shared memory"] = limits.shared_bytes // per_block
    limiter = min(bounds, key=lambda k: bounds[k])
    blocks = max(bounds[limiter], 0)
    return Occupancy(blocks=blocks, warps=blocks * warps_per_block, max_warps=limits.max_warps,
                     limiter=limiter)


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
