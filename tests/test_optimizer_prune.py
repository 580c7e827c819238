"""Theoretical occupancy and pruning by the compile report (``cudalens.occupancy``,
``cudalens.optimizer.prune``): the calculator's numbers for known configurations, every
pruning rule with its reason, the compile cache, and a real nvcc run where a
``__launch_bounds__`` candidate that forces spills is dropped."""

from __future__ import annotations

import dataclasses

import pytest

from cudalens.check.report import KernelResources
from cudalens.optimizer.candidate import Candidate
from cudalens.occupancy import LIMITS, occupancy
from cudalens.optimizer.passes import launch_bounds
from cudalens.optimizer.prune import BaselineDoesNotCompile, CompilePruner

from nvcc_util import needs_nvcc
from optimizer_fixtures import context_with_spec

SM90 = LIMITS["sm_90"]


@pytest.mark.parametrize("threads,regs,shared,blocks,fraction,limiter", [
    (256, 32, 0, 8, 1.0, "block size"),        # 8 x 8 warps = 64 warps; registers allow 8 too
    (256, 64, 0, 4, 0.5, "registers"),         # 2048 registers per warp: 32 warps
    (1024, 65, 0, 0, 0.0, "registers"),        # 65 -> 2304 per warp: 28 warps < one block
    (128, 32, 100000, 2, 0.125, "shared memory"),  # 101120 bytes per block with the reserve
    (32, 16, 0, 32, 0.5, "blocks per SM"),     # at most 32 blocks per SM
    (100, 10, 0, 16, 1.0, "block size"),       # 100 threads take 4 warps
])
def test_occupancy_calculator(threads, regs, shared, blocks, fraction, limiter):
    occ = occupancy(threads, regs, shared, SM90)
    assert (occ.blocks, occ.fraction, occ.limiter) == (blocks, fraction, limiter)


def test_occupancy_rejects_nonsense():
    with pytest.raises(ValueError, match="expected threads > 0"):
        occupancy(0, 32, 0)
    assert occupancy(128, 32, SM90.max_shared_per_block + 1).blocks == 0


SPEC = """
kernel heavy
size n = 4096
scalar n: int = n
in x: float[n]
out y: float[n]
block = 256
grid = ceil_div(n, block.x)
"""

HEAVY = """
__global__ void heavy(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v[24];
    #pragma unroll
    for (int j = 0; j < 24; ++j) v[j] = x[(i + j * 977) % n];
    float acc = 0.0f;
    #pragma unroll
    for (int j = 0; j < 24; ++j)
        #pragma unroll
        for (int k = 0; k < 24; ++k) acc += v[j] * v[k] * (j - k);
    y[i] = acc;
}
"""


def _ctx():
    return context_with_spec(HEAVY, "heavy", SPEC)


def _res(regs, shared=0, spill=0):
    return KernelResources(name="heavy", mangled="_Z5heavyPKfPfi", registers=regs,
                           shared_bytes=shared, constant_bytes=None, stack_bytes=spill,
                           spill_store_bytes=spill, spill_load_bytes=spill, arch="sm_90")


def _cand(label, source, block="256", options=()):
    ctx = _ctx()
    launch = dataclasses.replace(ctx.launch, block=(block,))
    return Candidate(label=label, explanation="x", source=source, kernel="heavy", launch=launch,
                     passes=("test",), options=tuple(options), family=label)


def test_every_rule_with_its_reason():
    ctx = _ctx()
    table = {
        ctx.text: (_res(40), None),
        "ok": (_res(40), None),
        "broken": (None, "expected a ';' (line 3)"),
        "spills": (_res(32, spill=96), None),
        "greedy": (_res(255), None),
        "hoards": (_res(32, shared=200000), None),
        "missing": (None, "ptxas reported no kernel named heavy (reported: other)"),
    }
    calls = []

    def fake(source, options):
        calls.append((source, options))
        return table[source]

    pruner = CompilePruner(ctx, compile=fake, workers=1)
    cands = [_cand("ok", "ok"), _cand("broken", "broken"), _cand("spills", "spills"),
             _cand("greedy", "greedy", block="1024"), _cand("hoards", "hoards", block="128"),
             _cand("missing", "missing"), _cand("ok2", "ok", block="512")]
    reasons = {a.candidate.label: a.reason for a in pruner(cands)}
    assert reasons == {
        "ok": None,
        "ok2": None,
        "broken": "does not compile: expected a ';' (line 3)",
        "spills": "spills registers to local memory (96 bytes stored, 96 bytes loaded per "
                  "thread at 32 registers) where the baseline spills none",
        "greedy": "cannot launch: 255 registers x 1024 threads exceed what one SM holds",
        "hoards": "theoretical occupancy 6% (1 block of 4 warps per SM, limited by shared "
                  "memory) is below 25% and below the baseline's 75%",
        "missing": "ptxas reported no kernel named heavy (reported: other)",
    }
    # one compile per distinct (source, options), the baseline's included
    assert sorted(calls) == sorted({(s, ()) for s in table})
    assert pruner.baseline().occupancy.fraction == 0.75  # 40 registers: 6 blocks of 8 warps
    assert pruner.resources(cands[0]).registers == 40


def test_baseline_that_does_not_compile_is_an_error():
    pruner = CompilePruner(_ctx(), compile=lambda s, o: (None, "boom (line 1)"))
    with pytest.raises(BaselineDoesNotCompile,
                       match="the original kernel heavy does not compile here: boom"):
        pruner([])


def test_unknown_arch():
    with pytest.raises(ValueError, match="no occupancy limits for sm_12"):
        CompilePruner(_ctx(), arch="sm_12")


@needs_nvcc
def test_real_compile_drops_the_bounds_that_force_spills():
    ctx = _ctx()
    capped = launch_bounds.apply(ctx, min_blocks=8)
    loose = launch_bounds.apply(ctx)
    pruner = CompilePruner(ctx)
    got = pruner([_cand("capped", capped.source), _cand("loose", loose.source)])
    assert got[0].reason is not None and got[0].reason.startswith(
        "spills registers to local memory (")
    assert got[0].reason.endswith("per thread at 32 registers) where the baseline spills none")
    assert got[1].reason is None
    base = pruner.baseline()
    assert base.spill_bytes == 0 and base.registers > 64
    assert base.occupancy.limiter == "registers"
