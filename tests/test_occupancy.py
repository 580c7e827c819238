"""The one occupancy model (``cudalens.occupancy``): its table against the CUDA C++
Programming Guide's "Technical Specifications per Compute Capability", and the Occupancy
Calculator's results for sm_90 (H100/H200) and sm_80 (A100), seen the same way by the
search's pruning and by the editor's hover (``lsp.bottleneck.occupancy``)."""

from __future__ import annotations

import pytest

from cudalens.lsp import bottleneck
from cudalens.occupancy import LIMITS, limits_for_capability, occupancy

KB = 1024


def test_the_table_holds_the_programming_guides_limits():
    sm90, sm80 = LIMITS["sm_90"], LIMITS["sm_80"]
    # sm_90: 2048 threads (64 warps), 32 blocks, 64K registers, 228 KB per SM, 227 KB per block
    assert (sm90.max_threads, sm90.max_warps, sm90.max_blocks, sm90.registers) == \
        (2048, 64, 32, 65536)
    assert (sm90.shared_bytes, sm90.max_shared_per_block) == (228 * KB, 227 * KB)
    # sm_80: 2048 threads, 32 blocks, 64K registers, 164 KB per SM, 163 KB per block
    assert (sm80.max_threads, sm80.max_blocks, sm80.registers) == (2048, 32, 65536)
    assert (sm80.shared_bytes, sm80.max_shared_per_block) == (164 * KB, 163 * KB)
    assert sm90.reserved_shared_per_block == sm80.reserved_shared_per_block == 1 * KB
    assert LIMITS["sm_75"].reserved_shared_per_block == 0  # no system reserve before 8.0
    assert limits_for_capability((9, 0)) is sm90 and limits_for_capability((6, 1)) is None


# threads, registers per thread, shared bytes per block -> blocks, warps, percent, limiter
SM90 = [
    (256, 32, 0, 8, 64, 100.0, "block size"),
    (256, 64, 0, 4, 32, 50.0, "registers"),       # 2048 registers per warp: 32 warps
    (1024, 65, 0, 0, 0, 0.0, "registers"),        # 65 -> 2304 per warp: 28 warps < one block
    (128, 32, 48 * KB, 4, 16, 25.0, "shared memory"),  # 49 KB with the reserve: 4 in 228 KB
    (128, 32, 100_000, 2, 8, 12.5, "shared memory"),   # 101,120 bytes each
    (32, 16, 0, 32, 32, 50.0, "blocks per SM"),
    (64, 16, 0, 32, 64, 100.0, "blocks per SM"),  # a tie with the block size: blocks first
    (128, 32, 227 * KB + 1, 0, 0, 0.0, "shared memory"),  # above the per-block maximum
]
SM80 = [
    (256, 32, 0, 8, 64, 100.0, "block size"),
    (256, 64, 0, 4, 32, 50.0, "registers"),
    (128, 32, 48 * KB, 3, 12, 18.75, "shared memory"),  # 3 x 49 KB in 164 KB
    (512, 40, 0, 3, 48, 75.0, "registers"),       # 40 -> 1280 per warp: 51 warps, 3 blocks
    (128, 32, 163 * KB + 1, 0, 0, 0.0, "shared memory"),
]


@pytest.mark.parametrize("cc,case", [((9, 0), c) for c in SM90] + [((8, 0), c) for c in SM80])
def test_pruning_and_hover_agree_with_the_calculator(cc, case):
    threads, regs, shared, blocks, warps, percent, limiter = case
    occ = occupancy(threads, regs, shared, limits_for_capability(cc))
    assert (occ.blocks, occ.warps, occ.percent, occ.limiter) == (blocks, warps, percent, limiter)
    assert occ.max_warps == 64
    assert bottleneck.occupancy(cc, threads, regs, shared) == occ


def test_hover_has_no_occupancy_for_an_unknown_capability_or_an_empty_block():
    assert bottleneck.occupancy((6, 1), 256, 10, 0) is None
    assert bottleneck.occupancy((9, 0), 0, 10, 0) is None
    sm86 = bottleneck.occupancy((8, 6), 256, 32, 0)  # 1536 threads per SM: 6 blocks, 48 warps
    assert (sm86.blocks, sm86.warps, sm86.max_warps, sm86.percent) == (6, 48, 48, 100.0)
