"""Pass ``launch_config``: a block-size search that changes only the launch configuration."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable
from cudalens.optimizer.passes import launch_config
from cudalens.optimizer.reasons import line_of
from cudalens.spec import expr as spec_expr

import block_sim
from nvcc_util import needs_nvcc
from optimizer_fixtures import context, context_with_spec


def test_1d_blocks_exclude_the_baseline():
    ctx = context("elementwise.cu", "saxpy")  # block = 256
    assert launch_config.check(ctx) is None
    assert launch_config.parameter_space(ctx) == (
        {"block": (512,)}, {"block": (128,)}, {"block": (1024,)}, {"block": (64,)})


def test_apply_changes_only_the_block():
    ctx = context("elementwise.cu", "saxpy")
    result = launch_config.apply(ctx, block=(512,))
    assert result.source == ctx.text
    assert result.launch.block == ("512",)
    assert result.launch.grid == ctx.launch.grid == ("ceil_div(n, block.x)",)
    assert result.launch.shared == ctx.launch.shared
    assert result.tags == ("block=512",)
    assert result.explanation == (
        "block of 512 threads (16 warps) instead of 256: changes how many warps each SM holds "
        "(occupancy) and how full the last wave is")


def test_2d_kernel_gets_2d_blocks():
    ctx = context("rejects.cu", "transpose")  # block = 16, 16
    assert launch_config.check(ctx) is None
    assert [p["block"] for p in launch_config.parameter_space(ctx)] == \
        [(32, 8), (32, 4), (32, 16), (32, 32), (64, 4)]
    result = launch_config.apply(ctx, block=(32, 8))
    assert result.launch.block == ("32", "8")
    assert result.tags == ("block=32x8",)
    env = {"w": 1024, "h": 768, "block": (32, 8, 1)}
    assert [spec_expr.evaluate(g, env) for g in result.launch.grid] == [32, 96]


def test_launch_bounds_limit_the_blocks():
    ctx = context("rejects.cu", "bounded")  # __launch_bounds__(128), block = 128
    assert launch_config.parameter_space(ctx) == ({"block": (64,)},)
    with pytest.raises(PassNotApplicable, match=re.escape(
            "launch_config on bounded: block 512 is not one of the blocks to try here (64)")):
        launch_config.apply(ctx, block=(512,))


@pytest.mark.parametrize("kernel,reason", [
    ("tiled_copy", "the kernel declares the fixed-size shared array '__shared__ float "
                   "tile[TILE * TILE];' (line 67), which usually assumes the block size"),
    ("block_templ", "non-type template parameter 'int BLOCK' may fix the block size at "
                    "compile time"),
    ("escapes", "the spec's grid (4096 / 256) does not depend on block.x, so a new block would "
                "change how many elements are covered (the body does not work alike with any "
                "block: 'blockIdx.x * blockDim.x' (line 49) uses blockDim.x other than to start "
                "or step a loop over the row (for (i = tid; i < n; i += blockDim.x)), to store "
                "the thread's slot of shared memory, in a tree over blockDim.x or in 'if (tid "
                "== 0)': the work may depend on the block size)"),
])
def test_fixture_rejections(kernel, reason):
    ctx = context("rejects.cu", kernel)
    assert launch_config.check(ctx) == reason
    assert launch_config.parameter_space(ctx) == ()
    with pytest.raises(PassNotApplicable, match=re.escape(f"launch_config on {kernel}: {reason}")):
        launch_config.apply(ctx, block=(128,))


KERNEL = """{macros}
__global__ void {bounds} k(const float* x, float* y, int n) {{
    {shared}
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * {factor};
}}
"""

SPEC = """
kernel k
size n = 4096
in x: float[n]
out y: float[{ylen}]
scalar n: int = n
block = {block}
grid = ceil_div(n, block.x)
shared = {shared}
"""


def _ctx(*, macros="", bounds="", shared_decl="", factor="2.0f", ylen="n", block="256",
         shared="0"):
    text = KERNEL.format(macros=macros, bounds=bounds, shared=shared_decl, factor=factor)
    return context_with_spec(text, "k", SPEC.format(ylen=ylen, block=block, shared=shared))


@pytest.mark.parametrize("kwargs,reason", [
    (dict(ylen="n * block.x"), "the length of buffer y (n * block.x) depends on the block"),
    (dict(macros="#define BS 256", factor="(float)BS"),
     "the body uses BS (= 256, the spec's block size) at line 5; the kernel may assume that "
     "block size"),
    (dict(macros="#define K 64", bounds="__launch_bounds__(2 * K)"),
     "__launch_bounds__(2 * K) is not a number the pass can read, so it cannot tell which "
     "block sizes the kernel allows"),
    (dict(block="8, 8, 4"), "the spec's block (8, 8, 4) is 3D; only 1D and 2D are searched"),
    (dict(bounds="__launch_bounds__(256)"), None),
    (dict(macros="#define MAXT 64", bounds="__launch_bounds__(MAXT)", block="64"),
     "no block size other than the spec's fits within __launch_bounds__(64)"),
])
def test_snippet_preconditions(kwargs, reason):
    assert launch_config.check(_ctx(**kwargs)) == reason


def test_dynamic_shared_memory_independent_of_the_block_is_fine():
    ctx = _ctx(shared="1024", shared_decl="extern __shared__ float s[];")
    assert launch_config.check(ctx) is None
    assert launch_config.apply(ctx, block=(128,)).launch.shared == "1024"


def test_unused_dynamic_shared_memory_sized_by_the_block_keeps_its_expression():
    ctx = _ctx(shared="block.x * 4", shared_decl="extern __shared__ float s[];")
    assert launch_config.check(ctx) is None
    result = launch_config.apply(ctx, block=(512,))
    assert result.launch.shared == "block.x * 4"
    assert "shared memory" not in result.explanation  # nothing indexes it


def test_launch_bounds_macro_is_read():
    ctx = _ctx(macros="#define MAXT 256", bounds="__launch_bounds__(MAXT)")
    assert [p["block"] for p in launch_config.parameter_space(ctx)] == [(128,), (64,)]


# A transpose whose blocks each own a fixed 32x32 tile (TILE_DIM-style names), without shared
# memory: the grid is tiled by the constants, so a block change would leave elements
# uncovered (fewer rows per block) or cover them twice.
TILED_SPEC = """
kernel {kernel}
size n = 1000
scalar n: int = n
in src: float[n * n]
out dst: float[n * n]
block = 32, 8
grid = ceil_div(n, block.x), ceil_div(n, block.x)
"""
TILED_KERNELS = [
    ("tile_consts", """
const int TILE_DIM = 32;
const int BLOCK_ROWS = 8;

__global__ void tile_consts(const float* src, float* dst, int n)
{
    int x = threadIdx.x + blockIdx.x * TILE_DIM;
    int y = threadIdx.y + blockIdx.y * TILE_DIM;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < n && y + j < n)
            dst[x * n + y + j] = src[(y + j) * n + x];
}
""", "'blockIdx.x * TILE_DIM' (line 7) tiles the grid by TILE_DIM (= 32), not by blockDim.x: "
     "each block covers a fixed 32-wide tile along x, so another block would leave elements "
     "uncovered or cover them twice", 7),
    ("tile_literal", """
__global__ void tile_literal(const float* src, float* dst, int n)
{
    const int col = threadIdx.x + 32 * blockIdx.x;
    const int row0 = (blockIdx.y) * 32 + threadIdx.y;
    for (int r = row0; r < row0 + 32; r += 8)
        if (col < n && r < n) dst[col * n + r] = src[r * n + col];
}
""", "'32 * blockIdx.x' (line 4) tiles the grid by 32, not by blockDim.x: each block covers a "
     "fixed 32-wide tile along x, so another block would leave elements uncovered or cover "
     "them twice", 4),
    ("tile_constexpr_y", """
#define ROWS 8
constexpr int kTile = 32;
__global__ void tile_constexpr_y(const float* src, float* dst, int n)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = threadIdx.y + (blockIdx.y * kTile);
    for (int j = 0; j < kTile; j += ROWS)
        if (x < n && y + j < n) dst[x * n + y + j] = src[(y + j) * n + x];
}
""", "'blockIdx.y * kTile' (line 7) tiles the grid by kTile (= 32), not by blockDim.y: each "
     "block covers a fixed 32-wide tile along y, so another block would leave elements "
     "uncovered or cover them twice", 7),
    ("tile_shared", """
#define TILE_DIM 32
#define BLOCK_ROWS 8
__global__ void tile_shared(const float* src, float* dst, int n)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];
    int x = threadIdx.x + blockIdx.x * TILE_DIM;
    int y = threadIdx.y + blockIdx.y * TILE_DIM;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < n && y + j < n) tile[threadIdx.y + j][threadIdx.x] = src[(y + j) * n + x];
    __syncthreads();
    x = threadIdx.x + blockIdx.y * TILE_DIM;
    y = threadIdx.y + blockIdx.x * TILE_DIM;
    for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
        if (x < n && y + j < n) dst[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
""", "the kernel declares the fixed-size shared array '__shared__ float tile[TILE_DIM]"
     "[TILE_DIM + 1];' (line 6), which usually assumes the block size", 6),
]


@pytest.mark.parametrize("kernel,text,reason,line", TILED_KERNELS,
                         ids=[k[0] for k in TILED_KERNELS])
def test_a_grid_tiled_by_a_constant_keeps_its_block(kernel, text, reason, line):
    from cudalens.optimizer.plan import make_plan

    plan = make_plan(context_with_spec(text, kernel, TILED_SPEC.format(kernel=kernel)))
    assert not [c for c in plan.candidates if "launch_config" in c.passes]
    [miss] = [n for n in plan.not_applied if n.pass_name == "launch_config"]
    assert (miss.reason, miss.line, miss.at_kernel) == (reason, line, False)


@pytest.mark.parametrize("index", [
    "blockIdx.x * blockDim.x + threadIdx.x",
    "4 * blockIdx.x * blockDim.x + threadIdx.x",  # the product's blockDim.x: a free block
    "threadIdx.x + blockIdx.x * (blockDim.x * 2)",
])
def test_a_grid_tiled_by_the_block_keeps_its_block_search(index):
    from cudalens.optimizer.plan import make_plan

    text = f"""
const int SCALE = 3;
__global__ void free_block(const float* src, float* dst, int n)
{{
    int i = {index};
    if (i < n) dst[i] = SCALE * src[i];
}}
"""
    spec = """
kernel free_block
size n = 4096
scalar n: int = n
in src: float[n]
out dst: float[n]
block = 256
grid = ceil_div(n, block.x)
"""
    plan = make_plan(context_with_spec(text, "free_block", spec))
    blocks = [c.parameters["block"] for c in plan.candidates if c.passes == ("launch_config",)]
    assert sorted(blocks, key=int) == ["64", "128", "512", "1024"]  # search order aside
    assert "launch_config" not in {n.pass_name for n in plan.not_applied}


# Dynamic shared memory indexed per thread (cudalens.optimizer.dynamic_shared): the bytes the
# candidates launch with must follow the block, or the pass refuses at the access it cannot
# bound.
DYN_SPEC = """
kernel dyn
size n = 4096
scalar n: int = n
in x: float[n] range(-1, 1)
out y: float[n]
block = 256
grid = ceil_div(n, block.x)
shared = {shared}
"""

DYN = """
__global__ void dyn(const float* x, float* y, int n)
{{
    extern __shared__ float s[];
    const int tid = threadIdx.x;
    const int i = blockIdx.x * blockDim.x + tid;
    {body}
}}
"""

# each block reverses its slice: s[blockDim.x - 1 - tid] stays within blockDim.x floats
REVERSE = ("s[tid] = i < n ? x[i] : 0.0f;\n    __syncthreads();\n"
           "    if (i < n) y[i] = s[blockDim.x - 1 - tid];")


def _dyn(body: str, shared: str):
    return context_with_spec(DYN.format(body=body), "dyn", DYN_SPEC.format(shared=shared))


def test_shared_bytes_of_the_block_follow_the_new_block():
    ctx = _dyn(REVERSE, "block.x * 4")
    assert launch_config.check(ctx) is None
    assert [p["block"] for p in launch_config.parameter_space(ctx)] == \
        [(512,), (128,), (1024,), (64,)]
    result = launch_config.apply(ctx, block=(1024,))
    assert result.launch.shared == "block.x * 4"
    assert result.explanation.endswith(
        "; the dynamic shared memory follows the block: block.x * 4 = 4096 bytes")


def test_fixed_shared_bytes_of_one_element_per_thread_are_scaled():
    ctx = _dyn(REVERSE, "1024")  # 256 floats: the spec's block's worth
    assert launch_config.check(ctx) is None
    result = launch_config.apply(ctx, block=(512,))
    assert result.launch.shared == "block.x * 4"
    assert result.explanation.endswith(
        "; the dynamic shared memory scales with the block: block.x * 4 = 2048 bytes instead "
        "of the spec's fixed 1024, the elements the kernel indexes per thread (set the "
        "launch's shared bytes the same way)")


def test_a_halo_needs_the_bytes_of_its_last_element():
    halo = ("s[tid + 1] = i < n ? x[i] : 0.0f;\n    if (tid == 0) s[0] = 0.0f;\n"
            "    if (tid == 0) s[blockDim.x + 1] = 0.0f;\n    __syncthreads();\n"
            "    if (i < n) y[i] = s[tid] + s[tid + 1] + s[tid + 2];")
    ctx = _dyn(halo, "(block.x + 2) * 4")
    assert launch_config.check(ctx) is None
    assert launch_config.apply(ctx, block=(64,)).launch.shared == "(block.x + 2) * 4"
    fixed = launch_config.apply(_dyn(halo, "1032"), block=(64,))
    assert fixed.launch.shared == "block.x * 4 + 8"
    short = launch_config.check(_dyn(halo, "block.x * 4"))
    assert short == ("the spec's dynamic shared memory (block.x * 4 = 1024 bytes) is less than "
                     "the 1032 bytes the kernel indexes at its block of 256 threads (line 9): "
                     "fix the spec's shared first")
    assert line_of(short) == 9


@pytest.mark.parametrize("body,reason,line", [
    ("for (int j = 0; j < 4; ++j) s[tid * 4 + j] = x[0];\n    if (i < n) y[i] = s[tid];",
     "the index of 's[tid * 4 + j]' (line 7) is not a function of threadIdx.x and blockDim.x, "
     "and the kernel is not a tree reduction the pass recognizes: it cannot tell how many "
     "bytes of dynamic shared memory a block of another size reads", 7),
    ("float* p = &s[tid];\n    *p = 1.0f;\n    if (i < n) y[i] = s[tid];",
     "the kernel takes the address '&s[tid]' of its dynamic shared memory at line 7: the pass "
     "cannot bound what is reached through it", 7),
    ("float* half = s + blockDim.x / 2;\n    half[tid] = 1.0f;\n    if (i < n) y[i] = s[tid];",
     "the kernel uses its dynamic shared memory as 's + blockDim.x / 2' at line 7, not as "
     "s[index]: the pass cannot bound what a block of another size reaches", 7),
    ("s[tid - 1] = 1.0f;\n    if (i < n) y[i] = s[tid];",
     "'s[tid - 1]' at line 7 indexes below the start of the dynamic shared memory for some "
     "threads", 7),
])
def test_uses_the_pass_cannot_bound_are_refused_at_their_line(body, reason, line):
    got = launch_config.check(_dyn(body, "block.x * 4"))
    assert got == reason and line_of(got) == line


TREE = """
__global__ void total(const float* x, float* out, int n)
{{
    extern __shared__ float s[];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned int st = {start}; st > 0; st >>= 1) {{
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }}
    if (t == 0) atomicAdd(out, s[0]);
}}
"""

TREE_SPEC = """
kernel total
size n = 4096
scalar n: int = n
in x: float[n] range(0, 1)
inout out: float[1]
block = 256
grid = ceil_div(n, block.x)
shared = {shared}
atomics
"""


def test_a_tree_over_the_block_is_per_thread_and_one_over_a_constant_is_not():
    ctx = context_with_spec(TREE.format(start="blockDim.x / 2"), "total",
                            TREE_SPEC.format(shared="256 * 4"))
    assert launch_config.apply(ctx, block=(1024,)).launch.shared == "block.x * 4"
    fixed = context_with_spec(TREE.format(start="128"), "total",
                              TREE_SPEC.format(shared="block.x * 4"))
    got = launch_config.check(fixed)
    assert got.startswith("the index of 's[t + st]' (line 10) is not a function of threadIdx.x")
    assert line_of(got) == 10


def test_a_byte_array_viewed_as_floats_counts_floats():
    body = ("s[tid] = 0.0f;\n    float* f = reinterpret_cast<float*>(s);\n"
            "    f[tid] = i < n ? x[i] : 0.0f;\n    __syncthreads();\n"
            "    if (i < n) y[i] = f[blockDim.x - 1 - tid];")
    text = DYN.format(body=body).replace("extern __shared__ float s[];",
                                         "extern __shared__ unsigned char s[];")
    ctx = context_with_spec(text, "dyn", DYN_SPEC.format(shared="1024"))
    assert launch_config.apply(ctx, block=(128,)).launch.shared == "block.x * 4"


CORPUS = Path(__file__).parent / "data" / "variants" / "warp_reduce"


def _corpus_tree():
    from cudalens.optimizer.context import make_context
    from cudalens.target import load_target

    target = load_target(CORPUS / "extern_block_bytes_atomic.cu")
    return make_context(target.text, str(target.path), target.kernel.qualified_name, target.spec)


def test_plan_of_the_extern_shared_tree_searches_blocks_with_scaled_bytes():
    """The corpus kernel (launched with block * sizeof(float) bytes, spec shared = block.x *
    4): plan proposes every block, each launched with block.x * 4 bytes."""
    from cudalens.optimizer.plan import make_plan

    plan = make_plan(_corpus_tree())
    tried = {c.launch.block: c.launch.shared for c in plan.candidates
             if c.passes == ("launch_config",)}
    assert tried == {("256",): "block.x * 4", ("512",): "block.x * 4",
                     ("1024",): "block.x * 4", ("64",): "block.x * 4"}
    assert "launch_config" not in {n.pass_name for n in plan.not_applied}


@block_sim.needs_gxx
def test_scaled_bytes_keep_every_block_in_range_and_fixed_bytes_would_not():
    """In block_sim's checked mode (AddressSanitizer around the launch's dynamic shared
    bytes): each candidate block with its scaled bytes stays in range and gives the same
    total; the same kernel with 512 threads and the spec's 128-thread bytes kept fixed writes
    past them."""
    ctx = _corpus_tree()
    sizes = {"B": 3, "T": 333}
    before = block_sim.run(ctx.text, "loss_total", ctx.spec, sizes)
    for params in launch_config.parameter_space(ctx):
        result = launch_config.apply(ctx, **params)
        after = block_sim.run(result.source, "loss_total", ctx.spec, sizes, result.launch,
                              checked=True)
        assert math.isclose(after.buffers["total"][0], before.buffers["total"][0],
                            rel_tol=1e-5), params
    kept = dataclasses.replace(ctx.launch, block=("512",), shared="512")
    with pytest.raises(block_sim.OutOfRange, match=r"WRITE of size 4"):
        block_sim.run(ctx.text, "loss_total", ctx.spec, sizes, kept, checked=True)


@needs_nvcc
def test_the_corpus_tree_compiles_at_every_block():
    from nvcc_util import compile_source

    assert compile_source(_corpus_tree().text).ok


# A block per row (grid = the rows): the block size is free when the body works alike with
# any block (cudalens.optimizer.block_rows)
ROWS = Path(__file__).resolve().parent / "data" / "variants" / "warp_per_row"


def _rows_variant(name: str):
    from variant_corpus import Variant, context as variant_context

    return variant_context(Variant("warp_per_row", ROWS / name))


@pytest.mark.parametrize("name", ["softmax_block_tree.cu", "softmax_block_ptr_if.cu"])
def test_a_block_per_row_softmax_searches_blocks_with_scaled_bytes(name):
    ctx = _rows_variant(name)
    assert launch_config.check(ctx) is None
    base = launch_config.baseline_block(ctx)[0]
    assert [p["block"] for p in launch_config.parameter_space(ctx)] == \
        [b for b in launch_config.BLOCKS_1D if b != (base,)]
    result = launch_config.apply(ctx, block=(1024,))
    assert result.source == ctx.text
    assert (result.launch.block, result.launch.grid, result.launch.shared) == \
        (("1024",), ctx.launch.grid, "block.x * 4")


@block_sim.needs_gxx
@pytest.mark.parametrize("name,sizes", [("softmax_block_tree.cu", {"B": 2, "T": 3, "C": 45}),
                                        ("softmax_block_ptr_if.cu", {"N": 3, "C": 1500})])
def test_every_block_of_a_block_per_row_softmax_computes_the_same_rows(name, sizes):
    """Checked mode (AddressSanitizer around the scaled dynamic shared bytes): every block
    the pass tries, rows shorter and longer than the block, gives the spec block's outputs."""
    ctx = _rows_variant(name)
    before = block_sim.run(ctx.text, "softmax_forward", ctx.spec, sizes)
    for params in launch_config.parameter_space(ctx):
        result = launch_config.apply(ctx, **params)
        after = block_sim.run(result.source, "softmax_forward", ctx.spec, sizes, result.launch,
                              checked=True, timeout=120)
        got, want = after.buffers["out"], before.buffers["out"]
        assert len(got) == len(want)
        assert all(math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6) for a, b in zip(got, want)), \
            params


ROW_SPEC = """
kernel k
size N = 64
size C = 300
scalar N: int = N
scalar C: int = C
in x: float[N * C]
out y: float[N]
block = 128
grid = N
shared = block.x * 4
"""

ROW_KERNEL = """
__global__ void k(const float* x, float* y, int N, int C) {{
    extern __shared__ float s[];
    int row = blockIdx.x;
    int tid = threadIdx.x;
    float acc = 0.0f;
    {loop}
    s[tid] = acc;
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st /= 2) {{
        if (tid < st) s[tid] += s[tid + st];
        __syncthreads();
    }}
    {final}
}}
"""

_WORDS = ("other than to start or step a loop over the row (for (i = tid; i < n; i += "
          "blockDim.x)), to store the thread's slot of shared memory, in a tree over blockDim.x "
          "or in 'if (tid == 0)': the work may depend on the block size)")
_GRID = ("the spec's grid (N) does not depend on block.x, so a new block would change how many "
         "elements are covered (the body does not work alike with any block: ")


@pytest.mark.parametrize("loop,final,reason,line", [
    ("for (int i = tid; i < C; i += blockDim.x) acc += x[row * C + i];",
     "if (tid == 0) y[row] = s[0];", None, None),
    # each thread one column: a block of another size covers other columns
    ("acc = x[row * C + tid];", "if (tid == 0) y[row] = s[0];",
     f"{_GRID}'row * C + tid' (line 7) uses threadIdx.x {_WORDS}", 7),
    # the loop steps by the spec's block, not blockDim.x
    ("for (int i = tid; i < C; i += 128) acc += x[row * C + i];",
     "if (tid == 0) y[row] = s[0];",
     f"{_GRID}'i = tid' (line 7) uses threadIdx.x {_WORDS}", 7),
    # the second slot holds a partial result whose meaning depends on the block
    ("for (int i = tid; i < C; i += blockDim.x) acc += x[row * C + i];",
     "if (tid == 0) y[row] = s[1];",
     f"{_GRID}'s[1]' (line 14) reads s outside a tree at another element than s[0]: what it "
     f"holds depends on the block size)", 14),
    # only the first warp's threads take part
    ("if (tid < 32) for (int i = tid; i < C; i += blockDim.x) acc += x[row * C + i];",
     "if (tid == 0) y[row] = s[0];",
     f"{_GRID}'tid < 32' (line 7) uses threadIdx.x {_WORDS}", 7),
])
def test_a_block_per_row_body_is_free_of_its_block_only_in_the_known_positions(
        loop, final, reason, line):
    ctx = context_with_spec(ROW_KERNEL.format(loop=loop, final=final), "k", ROW_SPEC)
    got = launch_config.check(ctx)
    assert got == reason and line_of(got) == line
