"""Theoretical occupancy: how many warps of a kernel an SM can hold.

The limits per SM and the allocation rules are those of the CUDA Occupancy Calculator and
``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` (CUDA C++ Programming Guide, "Technical
Specifications per Compute Capability"; CUDA C++ Best Practices Guide, "Calculating
Occupancy"): registers are allocated per warp in units of 256, shared memory per block in
units of 128 bytes with 1 KiB reserved per block by the system (compute capability 8.0 and
later), and a block counts whole warps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class SmLimits:
    """Per-SM limits of one compute capability. Shared memory in bytes."""

    max_threads: int
    max_blocks: int
    registers: int
    shared_bytes: int
    max_shared_per_block: int
    register_unit: int = 256  # registers allocated per warp in multiples of this
    shared_unit: int = 128
    reserved_shared_per_block: int = 1024
    warp: int = 32

    @property
    def max_warps(self) -> int:
        return self.max_threads // self.warp


# Compute capability -> limits ("Technical Specifications per Compute Capability").
LIMITS: dict[str, SmLimits] = {
    "sm_80": SmLimits(2048, 32, 65536, 167936, 166912),
    "sm_86": SmLimits(1536, 16, 65536, 102400, 101376),
    "sm_87": SmLimits(1536, 16, 65536, 167936, 166912),
    "sm_89": SmLimits(1536, 24, 65536, 102400, 101376),
    "sm_90": SmLimits(2048, 32, 65536, 233472, 232448),
}


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM and the share of the SM's warp slots they fill (0..1);
    ``limiter`` says which resource set the block count: ``"threads"``, ``"blocks"``,
    ``"registers"`` or ``"shared memory"``."""

    blocks: int
    warps_per_block: int
    fraction: float
    limiter: str


def occupancy(threads: int, registers: int, shared_bytes: int,
              limits: SmLimits = LIMITS["sm_90"]) -> Occupancy:
    """Theoretical occupancy of blocks of ``threads`` threads using ``registers`` registers
    per thread and ``shared_bytes`` of shared memory (static plus dynamic) per block.

    Raises:
        ValueError: ``threads`` is not positive, or a count is negative.
    """
    if threads <= 0 or registers < 0 or shared_bytes < 0:
        raise ValueError(f"expected threads > 0 and non-negative registers and shared memory, "
                         f"found threads={threads}, registers={registers}, "
                         f"shared_bytes={shared_bytes}")
    warps = -(-threads // limits.warp)
    limit = {"threads": limits.max_warps // warps, "blocks": limits.max_blocks}
    if registers:
        per_warp = -(-registers * limits.warp // limits.register_unit) * limits.register_unit
        limit["registers"] = (limits.registers // per_warp) // warps
    if shared_bytes:
        if shared_bytes > limits.max_shared_per_block:
            limit["shared memory"] = 0
        else:
            per_block = -(-(shared_bytes + limits.reserved_shared_per_block) //
                          limits.shared_unit) * limits.shared_unit
            limit["shared memory"] = limits.shared_bytes // per_block
    limiter = min(limit, key=lambda k: (limit[k], list(limit).index(k)))
    blocks = max(0, limit[limiter])
    return Occupancy(blocks, warps, blocks * warps / limits.max_warps, limiter)


def limits_for(arch: str) -> Optional[SmLimits]:
    """The limits of ``sm_XY``, or None when not in the table."""
    return LIMITS.get(arch)
