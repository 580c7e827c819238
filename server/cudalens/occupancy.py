"""Theoretical occupancy: how many warps of a kernel an SM can hold. The one occupancy model
of cudalens: the search's pruning (``optimizer/prune.py``) and the editor's hover
(``lsp/bottleneck.py``) both use it.

Sources. The per-SM limits (``LIMITS``) are the CUDA C++ Programming Guide's table
"Technical Specifications per Compute Capability" (CUDA 12.x): maximum resident threads and
blocks per SM, 32-bit registers per SM, shared memory per SM at the largest carveout, and the
most shared memory one block may use (opt-in). The allocation rules are those of NVIDIA's CUDA
Occupancy Calculator and ``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` (CUDA C++ Best
Practices Guide, "Calculating Occupancy"): registers are allocated per warp in units of 256,
shared memory per block in units of 128 bytes with 1 KiB reserved per block by the system
(compute capability 8.0 and later; none before), and a block counts whole warps.

Worked values (tests/test_occupancy.py): on sm_90 (H100, H200) 256 threads of 64 registers
fill 4 blocks = 32 of 64 warps (registers limit: 2048 registers per warp); 128 threads with
100,000 bytes of shared memory fit 2 blocks (101,120 bytes each with the reserve, of 233,472).
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


# Compute capability -> limits (CUDA C++ Programming Guide, "Technical Specifications per
# Compute Capability"): threads, blocks, registers per SM; shared memory per SM and per block
# (bytes: 96 KB = 98,304, 164 KB = 167,936, 228 KB = 233,472; per block 1 KB less from 8.0 on).
LIMITS: dict[str, SmLimits] = {
    "sm_70": SmLimits(2048, 32, 65536, 98304, 98304, reserved_shared_per_block=0),
    "sm_75": SmLimits(1024, 16, 65536, 65536, 65536, reserved_shared_per_block=0),
    "sm_80": SmLimits(2048, 32, 65536, 167936, 166912),
    "sm_86": SmLimits(1536, 16, 65536, 102400, 101376),
    "sm_87": SmLimits(1536, 16, 65536, 167936, 166912),
    "sm_89": SmLimits(1536, 24, 65536, 102400, 101376),
    "sm_90": SmLimits(2048, 32, 65536, 233472, 232448),
}


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM and the share of the SM's ``max_warps`` warp slots they fill
    (``fraction``, 0..1); ``limiter`` says which resource set the block count:
    ``"blocks per SM"``, ``"block size"`` (the SM's thread slots), ``"registers"`` or
    ``"shared memory"`` (on a tie, the first of these)."""

    blocks: int
    warps_per_block: int
    fraction: float
    limiter: str
    max_warps: int

    @property
    def warps(self) -> int:
        """Resident warps per SM."""
        return self.blocks * self.warps_per_block

    @property
    def percent(self) -> float:
        return 100.0 * self.fraction


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
    limit = {"blocks per SM": limits.max_blocks, "block size": limits.max_warps // warps}
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
    return Occupancy(blocks, warps, blocks * warps / limits.max_warps, limiter, limits.max_warps)


def limits_for(arch: str) -> Optional[SmLimits]:
    """The limits of ``sm_XY``, or None when not in the table."""
    return LIMITS.get(arch)


def limits_for_capability(cc: tuple[int, int]) -> Optional[SmLimits]:
    """The limits of compute capability ``(major, minor)`` (``(9, 0)``: ``sm_90``), or None
    when not in the table."""
    return LIMITS.get(f"sm_{cc[0]}{cc[1]}")
