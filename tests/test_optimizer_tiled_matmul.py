"""Pass ``tiled_matmul``: a naive matrix product staged through shared-memory tiles.

The rewrite adds each output's terms in the original order, so on the CPU block simulator
its outputs are bit for bit the original's (for every tile shape and ragged sizes). Variants:
the example; the operands' product written the other way round with the x index as the row,
an index macro and ``C = alpha * acc + beta * C``. Negative cases assert the reason.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable, make_context
from cudalens.optimizer.passes import tiled_matmul
from cudalens.source.parser import parse_source
from cudalens.target import load_target

import block_sim
from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

GEMM = """
#define AT(M, r, c, ld) M[(r) * (ld) + (c)]
__global__ void gemm(int m, int n, int k, float alpha, const float* A, const float* B,
                     float beta, float* C) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;   // x runs along rows here
    const int c = blockIdx.y * blockDim.y + threadIdx.y;
    if (c >= n || r >= m) return;
    float sum = 0;
    for (int kk = 0; kk < k; kk++)
        sum += B[kk * n + c] * A[r * k + kk];
    C[r * n + c] = alpha * sum + beta * C[r * n + c];
}
"""

GEMM_SPEC = """
kernel gemm
size m = 64
size n = 48
size k = 40
scalar m: int = m
scalar n: int = n
scalar k: int = k
scalar alpha: float = 1.5
scalar beta: float = 0.5
in A: float[m * k]
in B: float[k * n]
inout C: float[m * n]
block = 16, 16
grid = ceil_div(m, block.x), ceil_div(n, block.y)
"""


def _example():
    target = load_target(EXAMPLES / "matmul.cu")
    return make_context(target.text, str(target.path), target.kernel.name, target.spec)


def _signature(source: str, kernel: str):
    return [(p.name, p.type, p.is_pointer, p.is_const, p.is_restrict)
            for p in parse_source(source, "x.cu").kernel(kernel).parameters]


def test_example_rewrite_structure_launch_and_explanation():
    ctx = _example()
    assert tiled_matmul.check(ctx) is None
    assert tiled_matmul.parameter_space(ctx)[0] == {"tile": 32, "rows_per_thread": 4}
    result = tiled_matmul.apply(ctx)
    src = result.source
    assert _signature(src, "matmul_naive") == _signature(ctx.text, "matmul_naive")
    assert "__shared__ float A_tile[kTile][kTile], B_tile[kTile][kTile];" in src
    assert "float acc_r[4] = {};" in src  # the original's 0.0f for every output
    assert "const int col = blockIdx.x * kTile + threadIdx.x;" in src
    assert "A_tile[yrow][threadIdx.x] = (row < m && p < k) ? A[row * k + p] : 0.0f;" in src
    assert "B_tile[yrow][threadIdx.x] = (p < k && col < n) ? B[p * n + col] : 0.0f;" in src
    assert "acc_r[r] += A_tile[threadIdx.y + r * 8][pp] * B_tile[pp][threadIdx.x];" in src
    assert "C[row * n + col] = acc_r[r];" in src
    assert src.count("__syncthreads();") == 2
    assert result.launch.block == ("32", "8")
    assert result.launch.grid == ("ceil_div(n, 32)", "ceil_div(m, 32)")
    assert result.tags == ("tiled-matmul", "tile=32x4", "block=32x8")
    assert result.explanation.startswith(
        "32x32 shared-memory tiles: each element of A and B is loaded from global memory once "
        "per tile and coalesced instead of once per thread (32x fewer global loads), and each "
        "B value read from shared memory serves 4 outputs held in registers; block 32x8")


def test_gemm_variant_keeps_its_expression_and_epilogue():
    ctx = context_with_spec(GEMM, "gemm", GEMM_SPEC)
    assert tiled_matmul.check(ctx) is None
    result = tiled_matmul.apply(ctx, tile=16, rows_per_thread=1)
    src = result.source
    # the operand using the y index (c) is B: its tile is indexed [threadIdx.y][kk]
    # (``r`` is the kernel's row index, so the per-thread output counter is ``r1``)
    assert "sum_r[r1] += B_tile[threadIdx.y + r1 * 16][kkkk] * A_tile[kkkk][threadIdx.x];" \
        in src
    assert "C[r * n + c] = alpha * sum_r[r1] + beta * C[r * n + c];" in src
    assert "if (!(c >= n || r >= m)) {" in src
    assert result.launch.grid == ("ceil_div(m, 16)", "ceil_div(n, 16)")
    assert "coalesced" not in result.explanation  # A is read along k by the x index's tile


@needs_nvcc
def test_every_rewrite_compiles():
    ctx = _example()
    gemm = context_with_spec(GEMM, "gemm", GEMM_SPEC)
    sources = [tiled_matmul.apply(ctx, tile=t, rows_per_thread=r).source
               for t, r in tiled_matmul.SHAPES] + [tiled_matmul.apply(gemm).source]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(compile_source, sources))
    for compiled in results:
        assert compiled.ok, compiled.stderr


@block_sim.needs_gxx
@pytest.mark.parametrize("which,shape", [("example", (32, 4)), ("example", (16, 1)),
                                         ("gemm", (32, 8))])
def test_bit_for_bit_the_original_on_cpu(which, shape):
    if which == "example":
        ctx, kernel, sizes = _example(), "matmul_naive", {"m": 37, "n": 45, "k": 70}
    else:
        ctx, kernel, sizes = context_with_spec(GEMM, "gemm", GEMM_SPEC), "gemm", \
            {"m": 41, "n": 35, "k": 33}
    result = tiled_matmul.apply(ctx, tile=shape[0], rows_per_thread=shape[1])
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes)
    after = block_sim.run(result.source, kernel, ctx.spec, sizes, result.launch)
    assert after.buffers == before.buffers
    out = before.buffers["C"]
    assert 77 not in out[:sizes["m"] * sizes["n"]]


SPEC = """
kernel k
size m = 64
size n = 64
size kk = 64
scalar m: int = m
scalar n: int = n
scalar kk: int = kk
in A: float[m * kk]
in B: float[kk * n]
out C: float[m * n]
block = 16, 16
grid = ceil_div(n, block.x), ceil_div(m, block.y)
"""

HEAD = """
__global__ void k(const float* A, const float* B, float* C, int m, int n, int kk) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
"""


@pytest.mark.parametrize("body,reason", [
    ("float acc = 0.0f;\nfor (int p = 1; p < kk; ++p) acc += A[row * kk + p] * B[p * n + col];\n"
     "C[row * n + col] = acc;",
     "expected the loop 'for (int p = 0; p < K; ++p)', found 'for (int p = 1; p < kk; ++p) acc "
     "+= A[row * kk + p] * B[p * n + col];' at line 7"),
    ("float acc = 0.0f;\nfor (int p = 0; p < kk; ++p) acc += A[row * kk + p] * B[p * n + row];\n"
     "C[row * n + col] = acc;",
     "both operands use row: not a matrix product"),
    ("float acc = A[0];\nfor (int p = 0; p < kk; ++p) acc += A[row * kk + p] * B[p * n + col];\n"
     "C[row * n + col] = acc;",
     "the accumulator's initial value 'A[0]' uses the indices or a buffer"),
    ("float acc = 0.0f;\nfor (int p = 0; p < kk; ++p) acc += A[row * kk + p] * B[p * n + col] * "
     "A[p];\nC[row * n + col] = acc;",
     "expected the loop's statement to read two buffers once each as X[...], found "
     "'A[row * kk + p]', 'B[p * n + col]', 'A[p]' (line 7)"),
    ("C[row * n + col] = A[row * kk] * B[col];",
     "expected one loop over k in the guarded body, found 0"),
    ("float acc = 0.0f;\nfor (int p = 0; p < kk; ++p) acc += A[row * kk + p] * B[p * n + col] + "
     "p;\nC[row * n + col] = acc;",
     "the loop's statement uses p outside the two loads (line 7)"),
    ("float acc = 0.0f;\nfloat s = 1.0f;\n#pragma unroll\nfor (int p = 0; p < kk; ++p) "
     "acc += A[row * kk + p] * B[p * n + col];\nC[row * n + col] = acc * s;",
     "expected exactly the accumulator's declaration ('float acc = 0.0f;') before the loop, "
     "found 'float acc = 0.0f;' (line 6); 'float s = 1.0f;' (line 7)"),
])
def test_rejected_kernels_say_why(body, reason):
    ctx = context_with_spec(HEAD + body + "\n    }\n}\n", "k", SPEC)
    assert tiled_matmul.check(ctx) == reason
    with pytest.raises(PassNotApplicable, match=re.escape(f"tiled_matmul on k: {reason}")):
        tiled_matmul.apply(ctx)


def test_bad_shape():
    with pytest.raises(ValueError, match=r"\(tile, rows_per_thread\) must be one of"):
        tiled_matmul.apply(_example(), tile=64, rows_per_thread=4)


PRAGMA_BODY = ("float acc = 0.0f;\n#pragma unroll 4\nfor (int p = 0; p < kk; ++p)\n"
               "    acc += A[row * kk + p] * B[p * n + col];\nC[row * n + col] = acc;")


def test_a_pragma_before_the_loop_is_skipped_and_kept():
    from cudalens.optimizer.passes import regblock_matmul

    ctx = context_with_spec(HEAD + PRAGMA_BODY + "\n    }\n}\n", "k", SPEC)
    assert tiled_matmul.check(ctx) is None
    assert regblock_matmul.check(ctx) is None
    result = tiled_matmul.apply(ctx, tile=32, rows_per_thread=4)
    lines = [t.strip() for t in result.source.splitlines()]
    # the partial tile's loop, which keeps the bound kk, gets the original's hint
    at = lines.index("#pragma unroll 4")
    assert lines.count("#pragma unroll 4") == 1
    assert lines[at - 1] == "} else {" and lines[at + 1].startswith("for (int pp = 0; p0 + pp < kk;")


@needs_nvcc
def test_a_pragma_before_the_loop_compiles():
    from cudalens.optimizer.passes import regblock_matmul

    ctx = context_with_spec(HEAD + PRAGMA_BODY + "\n    }\n}\n", "k", SPEC)
    compile_source(tiled_matmul.apply(ctx, tile=32, rows_per_thread=4).source)
    compile_source(regblock_matmul.apply(ctx, **regblock_matmul.parameter_space(ctx)[0]).source)


@block_sim.needs_gxx
def test_a_pragma_before_the_loop_bit_for_bit_on_cpu():
    ctx = context_with_spec(HEAD + PRAGMA_BODY + "\n    }\n}\n", "k", SPEC)
    sizes = {"m": 37, "n": 45, "kk": 70}
    result = tiled_matmul.apply(ctx, tile=16, rows_per_thread=1)
    before = block_sim.run(ctx.text, "k", ctx.spec, sizes)
    after = block_sim.run(result.source, "k", ctx.spec, sizes, result.launch)
    assert after.buffers == before.buffers
