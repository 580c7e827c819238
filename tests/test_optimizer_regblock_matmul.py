"""Pass ``regblock_matmul``: register-blocked SGEMM (2D thread tiles, shared slabs, float4).

Each output adds the original statement's terms in the original order, so on the CPU block
simulator the rewrite's outputs are bit for bit the original's, for every tile shape, at
ragged sizes (scalar fallbacks) and at multiples of 4 (the 16-byte paths), over several
blocks. Negative cases assert the reason and its line.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable, make_context
from cudalens.optimizer.passes import regblock_matmul, tiled_matmul
from cudalens.optimizer.reasons import line_of
from cudalens.source.parser import parse_source
from cudalens.target import load_target

import block_sim
from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SPEC = """
kernel mm
size m = 40
size n = 48
size k = 24
scalar m: int = m
scalar n: int = n
scalar k: int = k
in A: {t}[m * k]
in B: {t}[k * n]
out C: {t}[m * n]
block = 16, 16
grid = ceil_div(n, block.x), ceil_div(m, block.y)
"""

KERNEL = """
__global__ void mm(const {t}* A, const {t}* B, {t}* C, int m, int n, int k) {{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {{
        {t} acc = 0;
        for (int p = 0; p < k; ++p)
            acc += A[{a}] * B[p * n + col];
        C[row * n + col] = acc;
    }}
}}
"""


def _example():
    target = load_target(EXAMPLES / "matmul.cu")
    return make_context(target.text, str(target.path), target.kernel.name, target.spec)


def _params(source: str):
    return [(p.name, p.type, p.is_pointer, p.is_const)
            for p in parse_source(source, "x.cu").kernel("matmul_naive").parameters]


def test_example_rewrite_launch_structure_and_explanation():
    ctx = _example()
    assert regblock_matmul.check(ctx) is None
    space = regblock_matmul.parameter_space(ctx)
    assert space[0] == {"bm": 128, "bn": 128, "bk": 8, "tm": 8, "tn": 8, "stages": 1}
    assert space[4] == {"bm": 128, "bn": 128, "bk": 8, "tm": 8, "tn": 8, "stages": 2}
    assert len(space) == 8
    result = regblock_matmul.apply(ctx)
    src = result.source
    assert _params(src) == _params(ctx.text)
    assert (result.launch.block, result.launch.grid) == \
        (("16", "16"), ("ceil_div(n, 128)", "ceil_div(m, 128)"))
    assert result.tags == ("regblock-matmul", "tile=128x128x8", "thread=8x8", "block=16x16")
    assert "alignas(16) __shared__ float A_tile[kBK][kBM], B_tile[kBK][kBN];" in src
    assert "float acc_r[kTM][kTN] = {};" in src
    # A is contiguous along p: four p of one row, stored down the slab
    assert ("if (row < m && p + 3 < k && reinterpret_cast<size_t>(&A[row * k + p]) % 16 == 0)"
            in src)
    # B is contiguous along col: one 16-byte store into the slab
    assert "*reinterpret_cast<float4*>(&B_tile[pp][dd]) =" in src
    assert "acc_r[i][j] += A_r[i] * B_r[j];" in src  # the original statement, pasted
    assert "for (int pp = 0; p0 + pp < k; ++pp) step(pp);" in src  # the last slab stops at k
    assert "C[row * n + col] = acc_r[i][j];" in src
    assert "8x8 outputs in registers" in result.explanation
    assert "8x fewer shared loads per multiply-add" in result.explanation
    # tiled_matmul recognizes the same kernel through the shared match
    assert tiled_matmul.check(ctx) is None


@block_sim.needs_gxx
@pytest.mark.parametrize("shape", [s + (n,) for n in (1, 2) for s in regblock_matmul.SHAPES],
                         ids=lambda s: "x".join(map(str, s[:5])) + f"-stages{s[5]}")
@pytest.mark.parametrize("sizes", [{"m": 70, "n": 67, "k": 19}, {"m": 20, "n": 24, "k": 16}],
                         ids=["ragged", "aligned"])
def test_rewrite_is_bit_identical_on_cpu(shape, sizes):
    ctx = _example()
    params = dict(zip(("bm", "bn", "bk", "tm", "tn", "stages"), shape))
    result = regblock_matmul.apply(ctx, **params)
    before = block_sim.run(ctx.text, "matmul_naive", ctx.spec, sizes)
    after = block_sim.run(result.source, "matmul_naive", ctx.spec, sizes, result.launch)
    assert after.buffers == before.buffers
    assert 77 not in before.buffers["C"][:sizes["m"] * sizes["n"]]


@needs_nvcc
def test_every_shape_compiles_to_vector_loads_without_local_memory():
    ctx = _example()
    sources = [regblock_matmul.apply(ctx, **p).source for p in regblock_matmul.parameter_space(ctx)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda s: compile_source(s, ptx=True), sources))
    for params, r in zip(regblock_matmul.parameter_space(ctx), results):
        assert r.ok, (params, r.stderr)
        assert "ld.global.nc.v4.f32" in r.ptx or "ld.global.v4.f32" in r.ptx, params
        assert "ld.shared.v4.f32" in r.ptx, params
        assert ".local" not in r.ptx, params  # the register tiles stay in registers
        # the full slab's bk steps unrolled (the partial slab's loop comes on top)
        assert r.ptx.count("fma.rn.f32") > params["bk"] * params["tm"] * params["tn"]


def test_double_operands_are_left_to_tiled_matmul():
    ctx = context_with_spec(KERNEL.format(t="double", a="row * k + p"), "mm",
                            SPEC.format(t="float64"))
    assert regblock_matmul.check(ctx) == \
        "A holds double; the pass register-blocks fp32 products (float4 loads)"
    assert tiled_matmul.check(ctx) is None
    with pytest.raises(PassNotApplicable, match="regblock_matmul on mm: A holds double"):
        regblock_matmul.apply(ctx)


def test_operand_contiguous_along_neither_index_is_refused_at_its_line():
    ctx = context_with_spec(KERNEL.format(t="float", a="(row * k + p) * 2"), "mm",
                            SPEC.format(t="float").replace("float[m * k]", "float[2 * m * k]"))
    reason = regblock_matmul.check(ctx)
    assert reason == ("'A[(row * k + p) * 2]' (line 8) is contiguous neither along p nor "
                      "along row: no 16-byte loads of A")
    assert line_of(reason) == 8


def test_unknown_shape_is_a_value_error():
    with pytest.raises(ValueError, match="must be one of"):
        regblock_matmul.apply(_example(), bm=256)
