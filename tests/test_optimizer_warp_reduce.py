"""Pass ``warp_reduce``: shared-memory tree reductions replaced by warp shuffles.

Positive cases: the example (interleaved addressing with ``%``), sequential addressing
(``s = blockDim.x / 2; s > 0; s >>= 1``) with a max, the strided-index interleaved form in a
template, and an ``extern __shared__`` array with a final ``atomicAdd``. Each rewrite keeps
the signature and the launch, compiles with nvcc, and on the CPU block simulator (real
barriers, shuffles through per-warp slots) gives the same per-block results: equal for max,
within float rounding for sums (the order of the additions changes). Negative cases assert
the reason.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable, make_context
from cudalens.optimizer.passes import warp_reduce
from cudalens.source.parser import parse_source
from cudalens.target import load_target

import block_sim
from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SPEC = """
kernel {kernel}
size n = 100000
scalar n: int = n
in in: {t}[n]
{out}
block = {block}
grid = ceil_div(n, {block})
{extra}"""

SEQUENTIAL_MAX = """
__global__ void seq_max(const float* in, float* out, int n) {
    extern __shared__ float sdata[];
    const unsigned int t = threadIdx.x;
    float v = -INFINITY;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x)
        v = fmaxf(v, in[i]);
    sdata[t] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) sdata[t] = fmaxf(sdata[t], sdata[t + s]);
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = sdata[0];
}
"""

STRIDED_TEMPLATE = """
#define THREADS 128
template <typename T>
__global__ void strided_sum(const T* in, T* out, int n) {
    __shared__ T partial[THREADS];
    int tid = threadIdx.x;
    int i = blockIdx.x * THREADS + tid;
    if (i < n) partial[tid] = in[i];
    else partial[tid] = 0;
    __syncthreads();
    for (int stride = 1; stride < THREADS; stride <<= 1) {
        int index = 2 * stride * tid;
        if (index < THREADS) {
            partial[index] = partial[index] + partial[index + stride];
        }
        __syncthreads();
    }
    if (0 == tid) out[blockIdx.x] = partial[0];
}
template __global__ void strided_sum<double>(const double*, double*, int);
"""

ATOMIC_TOTAL = """
__global__ void total(const int* in, int* out, int n) {
    __shared__ int s[256];
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = 0;
    if (i < n) s[threadIdx.x] += in[i];
    __syncthreads();
    for (unsigned int st = 1; st < blockDim.x; st = st * 2) {
        if ((threadIdx.x & (2 * st - 1)) == 0) s[threadIdx.x] += s[threadIdx.x + st];
        __syncthreads();
    }
    if (!threadIdx.x) atomicAdd(out, s[0]);
}
"""

VARIANTS = {
    "sequential_max": (SEQUENTIAL_MAX, "seq_max", SPEC.format(
        kernel="seq_max", t="float", out="out out: float[64]", block=256,
        extra="shared = 256 * 4\n").replace("grid = ceil_div(n, 256)", "grid = 64")),
    "strided_template": (STRIDED_TEMPLATE, "strided_sum", SPEC.format(
        kernel="strided_sum", t="double", out="out out: double[ceil_div(n, 128)]", block=128,
        extra="")),
    "atomic_total": (ATOMIC_TOTAL, "total", SPEC.format(
        kernel="total", t="int32", out="inout out: int32[1]", block=256, extra="atomics\n")),
}


def _example():
    target = load_target(EXAMPLES / "reduce_sum.cu")
    return make_context(target.text, str(target.path), target.kernel.name, target.spec), \
        target.kernel.name


def _variant(name):
    text, kernel, spec = VARIANTS[name]
    return context_with_spec(text, kernel, spec), kernel


def _signature(source: str, kernel: str):
    return [(p.name, p.type, p.is_pointer, p.is_const, p.is_restrict)
            for p in parse_source(source, "x.cu").kernel(kernel).parameters]


def test_example_rewrite_structure_and_explanation():
    ctx, kernel = _example()
    assert warp_reduce.check(ctx) is None
    assert warp_reduce.parameter_space(ctx) == ({},)
    result = warp_reduce.apply(ctx)
    src = result.source
    assert _signature(src, kernel) == _signature(ctx.text, kernel)
    assert result.launch == ctx.launch
    assert "__shared__ float s[BLOCK];" not in src
    assert "v = (i < n) ? in[i] : 0.0f;" in src
    assert src.count("v += __shfl_down_sync(0xffffffffu, v, offset);") == 2
    assert "__shared__ float warp_vals[32];" in src
    assert src.count("__syncthreads();") == 1
    assert "partial[blockIdx.x] = v;" in src
    assert result.tags == ("warp-reduce",)
    assert result.explanation == (
        "warp-shuffle reduction instead of the shared-memory tree (interleaved addressing with "
        "a modulo test (divergent warps)): each warp combines its 32 values in registers with "
        "5 __shfl_down_sync steps, so 8 rounds of shared-memory read-modify-writes and 9 "
        "__syncthreads() per block become one shared store per warp and one barrier; the same "
        "per-block sum of 256 values (the float summation order changes: results may differ "
        "in the last bits, within the tolerance the runner checks)")


def test_sequential_max_combines_with_fmaxf_and_keeps_the_loading_loop():
    ctx, kernel = _variant("sequential_max")
    result = warp_reduce.apply(ctx)
    assert "v = fmaxf(v, in[i]);" in result.source  # the thread's own loop, untouched
    assert "v1 = v;" in result.source  # sdata[t] = v; with the shared slot renamed
    assert "v1 = fmaxf(v1, __shfl_down_sync(0xffffffffu, v1, offset));" in result.source
    assert "sequential addressing" in result.explanation
    assert "the same per-block fmaxf of 256 values" in result.explanation
    assert "summation order" not in result.explanation


def test_strided_template_and_atomic_forms_are_recognized():
    ctx, _ = _variant("strided_template")
    result = warp_reduce.apply(ctx)
    assert "__shared__ T warp_vals[32];" in result.source
    assert "interleaved addressing with a strided index" in result.explanation
    ctx, _ = _variant("atomic_total")
    result = warp_reduce.apply(ctx)
    assert "if (!threadIdx.x) atomicAdd(out, v);" in result.source
    assert "v = 0;" in result.source and "if (i < n) v += in[i];" in result.source


@needs_nvcc
def test_every_rewrite_compiles():
    contexts = [_example()[0]] + [_variant(n)[0] for n in VARIANTS]
    sources = [warp_reduce.apply(ctx).source for ctx in contexts]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(compile_source, sources))
    for compiled in results:
        assert compiled.ok, compiled.stderr


def _close(a: list, b: list, rel: float) -> bool:
    scale = max(abs(x) for x in a) or 1.0
    return all(abs(x - y) <= rel * scale for x, y in zip(a, b)) and len(a) == len(b)


@block_sim.needs_gxx
@pytest.mark.parametrize("name,n,written", [("example", 1000, 4), ("sequential_max", 3001, 64),
                                            ("strided_template", 1000, 8),
                                            ("atomic_total", 999, 1)])
def test_same_results_as_the_original_on_cpu(name, n, written):
    ctx, kernel = _example() if name == "example" else _variant(name)
    result = warp_reduce.apply(ctx)
    before = block_sim.run(ctx.text, kernel, ctx.spec, {"n": n})
    after = block_sim.run(result.source, kernel, ctx.spec, {"n": n}, result.launch)
    out = "partial" if name == "example" else "out"
    assert after.buffers["in"] == before.buffers["in"]
    if name in ("sequential_max", "atomic_total"):
        assert after.buffers == before.buffers  # a maximum and integer sums are exact
    else:
        assert _close(before.buffers[out], after.buffers[out], 1e-6)
        assert after.buffers[out][written:] == before.buffers[out][written:]  # untouched tail
    assert 77 not in before.buffers[out][:written]  # every block wrote its result


REJECT_SPEC = SPEC.format(kernel="k", t="float", out="out out: float[ceil_div(n, 256)]",
                          block=256, extra="")

REJECTS = [
    ("""
__global__ void k(const float* in, float* out, int n) {
    __shared__ volatile float s[256];
    s[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    for (int st = 128; st > 32; st >>= 1) { if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st]; __syncthreads(); }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}""", "the shared array is volatile (line 3): a warp-synchronous reduction, not the tree form"),
    ("""
__global__ void k(const float* in, float* out, int n) {
    __shared__ float s[256];
    s[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    for (int st = blockDim.x / 4; st > 0; st >>= 1) { if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st]; __syncthreads(); }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}""", "the loop at line 6 starts from 'blockDim.x / 4', which is not half of blockDim.x or of "
      "the spec's block size"),
    ("""
__global__ void k(const float* in, float* out, int n) {
    __shared__ float s[256];
    s[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    for (int st = 128; st > 0; st >>= 1) { if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st]; __syncthreads(); }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0] + s[1];
}""", "the final statement reads 's[1]' (line 7); expected only s[0]"),
    ("""
__global__ void k(const float* in, float* out, int n) {
    __shared__ float s[256];
    s[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
    s[threadIdx.x + 1] = 0.0f;
    __syncthreads();
    for (int st = 128; st > 0; st >>= 1) { if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st]; __syncthreads(); }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}""", "before the first barrier the shared array is used as 's[threadIdx.x + 1]' (line 5); "
      "expected only s[tid]"),
    ("""
__global__ void k(const float* in, float* out, int n) {
    __shared__ float s[256];
    __shared__ float t[256];
    s[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}""", "the kernel declares 2 __shared__ variables (lines 3, 4); the pass handles one array"),
    ("""
__global__ void k(const float* in, float* out, int n) {
    __shared__ float s[256];
    s[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    for (int st = 128; st > 0; st >>= 1) { if (threadIdx.x < st) s[threadIdx.x] *= s[threadIdx.x + st]; __syncthreads(); }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}""", "expected the combine 's[i] += s[i + stride]' (or a = a + b, a = fmaxf(a, b), "
      "if (b > a) a = b...), found 's[threadIdx.x] *= s[threadIdx.x + st];' at line 6"),
    ("""
__global__ void k(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}""", "the kernel declares no __shared__ array: not a shared-memory reduction"),
]


@pytest.mark.parametrize("text,reason", REJECTS)
def test_rejected_kernels_say_why(text, reason):
    ctx = context_with_spec(text, "k", REJECT_SPEC)
    assert warp_reduce.check(ctx) == reason
    with pytest.raises(PassNotApplicable, match=re.escape(f"warp_reduce on k: {reason}")):
        warp_reduce.apply(ctx)


@pytest.mark.parametrize("block,reason", [
    ("192", "the spec's block of 192 threads is not a power of two of at least 32 (whole warps)"),
    ("16", "the spec's block of 16 threads is not a power of two of at least 32 (whole warps)"),
    ("128, 2", "the spec's block 128x2x1 is not 1D; the pass rewrites 1D block reductions"),
])
def test_block_shapes_the_rewrite_cannot_take(block, reason):
    ctx, _ = _example()
    spec_text = (EXAMPLES / "reduce_sum.cu.spec").read_text().replace("block = 256",
                                                                     f"block = {block}")
    ctx = context_with_spec(ctx.text, "block_sum", spec_text)
    assert warp_reduce.check(ctx) == reason


def test_loop_limit_must_be_the_block_size():
    ctx, _ = _example()
    spec_text = (EXAMPLES / "reduce_sum.cu.spec").read_text()
    text = ctx.text.replace("stride < blockDim.x", "stride < 128")
    ctx = context_with_spec(text, "block_sum", spec_text)
    assert warp_reduce.check(ctx) == ("the loop at line 14 runs to '128', which is not blockDim.x "
                                      "or the spec's block size")


def _corpus(folder, name):
    from variant_corpus import ROOT, Variant, context

    return context(Variant(folder, ROOT / folder / name))


@pytest.mark.parametrize("folder,name", [("warp_reduce", "byte_buffer_cast.cu"),
                                         ("coarsen_reduce", "byte_buffer_cstyle.cu")])
def test_a_byte_buffer_viewed_as_floats_is_the_tree_array(folder, name):
    from cudalens.optimizer.block_reduction import match
    from cudalens.optimizer.passes import coarsen_reduce
    from cudalens.optimizer.plan import make_plan

    ctx = _corpus(folder, name)
    m = match(ctx, 256 if folder == "warp_reduce" else 128)
    view = m.parsed.text_of(m.view)
    assert (m.shared, m.element_type) == (("sdata", "float") if folder == "warp_reduce"
                                          else ("acc", "float"))
    assert view in ("float* sdata = reinterpret_cast<float*>(smem);",
                    "float* const acc = (float*)scratch;")
    plan = make_plan(ctx)
    passes = {p for c in plan.candidates for p in c.passes}
    assert {"warp_reduce"} <= passes
    missing = {n.pass_name: n.reason for n in plan.not_applied}
    assert "warp_reduce" not in missing
    if folder == "warp_reduce":  # one warp per block would change the partials' count
        assert missing["coarsen_reduce"] == ("the length of buffer block_max (ceil_div(n, "
                                             "block.x)) depends on the block")
    else:
        assert "coarsen_reduce" not in missing
    # warp_reduce no longer reads the byte buffer; it keeps the user's launch, dynamic shared
    # bytes included, so it stays a drop-in
    wr = warp_reduce.apply(ctx)
    assert wr.launch == ctx.launch and wr.launch.shared.strip() not in ("", "0")
    assert "smem" not in wr.source.split("{", 1)[1] and "scratch" not in wr.source.split("{", 1)[1]
    if folder == "coarsen_reduce":
        assert "coarsen_reduce" in passes
        cr = coarsen_reduce.apply(ctx)  # one warp, registers only: no dynamic shared memory
        assert (cr.launch.block, cr.launch.shared) == (("32",), "0")


BYTE_VIEW_REJECTS = [
    ("""
__global__ void k(const float* in, float* out, int n)
{
    extern __shared__ unsigned char smem[];
    float* s = reinterpret_cast<float*>(smem);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.0f;
    smem[0] = 1;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}""", "the shared byte array smem is used at line 8 besides its view 'float* s = "
      "reinterpret_cast<float*>(smem);' (line 5)", 8),
    ("""
__global__ void k(const float* in, float* out, int n)
{
    extern __shared__ unsigned char smem[];
    float* s = (float*)smem;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    s += 0;
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) s[threadIdx.x] += s[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}""", "the view s of the shared byte array is changed at line 9", 9),
]


@pytest.mark.parametrize("text,reason,line", BYTE_VIEW_REJECTS)
def test_a_byte_buffer_used_besides_its_view_says_where(text, reason, line):
    from cudalens.optimizer.plan import make_plan

    spec = SPEC.format(kernel="k", t="float", out="out out: float[ceil_div(n, 256)]",
                       block=256, extra="shared = 256 * 4\n")
    plan = make_plan(context_with_spec(text, "k", spec))
    assert not [c for c in plan.candidates if {"warp_reduce", "coarsen_reduce"} & set(c.passes)]
    by = {n.pass_name: n for n in plan.not_applied}
    for p in ("warp_reduce", "coarsen_reduce"):
        assert (by[p].reason, by[p].line, by[p].at_kernel) == (reason, line, False)
