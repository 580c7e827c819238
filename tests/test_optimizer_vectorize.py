"""Passes ``vectorize_gridstride`` and ``gridstride`` (``cudalens.optimizer``).

* positive cases: the fixture kernels in ``data/optimizer/elementwise.cu`` (textbook saxpy,
  early return with ``const int`` and a macro, ``size_t``/double, a template with T=float,
  int elements with a prototype); the rewrites keep the signature, compile with nvcc, use
  vector instructions (PTX), and compute the same values as the original when every thread
  is simulated on the CPU, for ragged sizes and for aligned and misaligned pointers;
* negative cases: ``data/optimizer/rejects.cu`` and small snippets, asserting the reason.
"""

from __future__ import annotations

import re

import pytest

from cudalens.optimizer.context import PassNotApplicable
from cudalens.optimizer.passes import gridstride, vectorize_gridstride
from cudalens.source.parser import parse_source
from cudalens.spec import expr as spec_expr

import block_sim
import host_sim
from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context, context_with_spec

POSITIVE = ("saxpy", "squares", "daxpy_clamp", "scale", "iadd")


def _signature(source: str, kernel: str):
    k = parse_source(source, "x.cu").kernel(kernel)
    return [(p.name, p.type, p.is_pointer, p.is_const, p.is_restrict) for p in k.parameters]


@pytest.mark.parametrize("kernel", POSITIVE)
def test_elementwise_kernels_are_accepted(kernel):
    ctx = context("elementwise.cu", kernel)
    assert vectorize_gridstride.check(ctx) is None
    assert gridstride.check(ctx) is None


@pytest.mark.parametrize("kernel", POSITIVE)
@pytest.mark.parametrize("pass_", [vectorize_gridstride, gridstride], ids=lambda p: p.name)
def test_signature_and_block_are_kept(kernel, pass_):
    ctx = context("elementwise.cu", kernel)
    result = pass_.apply(ctx, blocks_per_sm=8)
    assert _signature(result.source, kernel) == _signature(ctx.text, kernel)
    assert result.launch.block == ctx.launch.block
    assert result.launch.shared == ctx.launch.shared
    # every other kernel of the file is untouched, byte for byte
    others = [k for k in ctx.source.kernels if k.name != kernel]
    new = parse_source(result.source, "x.cu")
    for k in others:
        after = new.kernel(k.name)
        assert result.source.encode()[after.start_byte:after.end_byte] == \
            ctx.text.encode()[k.start_byte:k.end_byte]


def _kernel_text(source: str, kernel: str) -> str:
    k = parse_source(source, "x.cu").kernel(kernel)
    return source.encode()[k.start_byte:k.end_byte].decode()


def test_saxpy_vector_code_is_what_an_engineer_writes():
    ctx = context("elementwise.cu", "saxpy")
    src = vectorize_gridstride.apply(ctx, blocks_per_sm=8).source
    assert "cudalens_vec" not in src and "long long" not in src
    assert _kernel_text(src, "saxpy") == """\
__global__ void saxpy(int n, float a, const float* x, float* y) {
    // float4 loads/stores (fewer, wider memory instructions) in a grid-stride loop;
    // the tail, and every element when a pointer is unaligned, go one by one.
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    if (reinterpret_cast<size_t>(x) % 16 == 0 && reinterpret_cast<size_t>(y) % 16 == 0) {
        for (int v1 = i; v1 < n / 4; v1 += stride) {
            float4 x4 = reinterpret_cast<const float4*>(x)[v1];
            float4 y4 = reinterpret_cast<float4*>(y)[v1];
            y4.x = a * x4.x + y4.x;
            y4.y = a * x4.y + y4.y;
            y4.z = a * x4.z + y4.z;
            y4.w = a * x4.w + y4.w;
            reinterpret_cast<float4*>(y)[v1] = y4;
        }
        i += n / 4 * 4;
    }
    for (; i < n; i += stride) {
        y[i] = a * x[i] + y[i];
    }
}"""


def test_scalar_gridstride_keeps_the_users_index_line():
    src = gridstride.apply(context("elementwise.cu", "iadd")).source
    assert _kernel_text(src, "iadd") == """\
__global__ void iadd(int* a, int* b, int* c, int n)
{
\t// Grid-stride loop: a grid of a few blocks per SM, each thread handles several elements.
\tconst int stride = gridDim.x * blockDim.x;
\tfor (int i = blockIdx.x*blockDim.x + threadIdx.x; i < n; i += stride) {
\t\tc[i] = a[i] + b[i];
\t}
}"""


def test_index_too_wide_for_int_counts_in_64_bits():
    # 2^30 + 2^29 elements: n - 1 + stride passes 2^31 - 1, so int would overflow
    body = "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = 2.0f * x[i];"
    ctx = _snippet(body, size="(1 << 30) + (1 << 29)")
    for pass_ in (vectorize_gridstride, gridstride):
        text = _kernel_text(pass_.apply(ctx).source, "k")
        assert "long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;" in text
        assert "const long long stride = (long long)gridDim.x * blockDim.x;" in text
        assert "for (; e < n; e += stride) {" in text or \
            "for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; " \
            "e += stride) {" in text
        assert "const int i = (int)e;" in text
    small = _snippet(body, size="1 << 29")
    assert "long long" not in _kernel_text(vectorize_gridstride.apply(small).source, "k")


@host_sim.needs_gxx
@pytest.mark.parametrize("pass_", [vectorize_gridstride, gridstride], ids=lambda p: p.name)
def test_64_bit_counter_computes_the_same_values_on_cpu(pass_):
    body = ("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (i < n) y[i] = 2.0f * x[i] + i;")
    ctx = _snippet(body, size="(1 << 30) + (1 << 29)")
    result = pass_.apply(ctx)
    assert "long long e" in result.source
    original = host_sim.build(host_sim.driver(ctx.text, "k", ctx.spec, "n"))
    rewritten = host_sim.build(host_sim.driver(result.source, "k", ctx.spec, "n"))
    for n in (1, 5, 1003):
        for mask in (0, 1, 2, 3):
            grid = max(1, min(-(-n // 256), 3))  # a capped grid: threads loop
            assert host_sim.run(rewritten, n, mask, grid, 256) == \
                host_sim.run(original, n, mask, -(-n // 256), 256), f"n={n} mask={mask}"


def test_saxpy_launch_grid_choices():
    ctx = context("elementwise.cu", "saxpy")
    capped = vectorize_gridstride.apply(ctx, blocks_per_sm=16).launch
    assert capped.grid == ("min(ceil_div(n, block.x * 4), sm_count * 16)",)
    full = vectorize_gridstride.apply(ctx, blocks_per_sm=None).launch
    assert full.grid == ("ceil_div(n, block.x * 4)",)
    scalar = gridstride.apply(ctx, blocks_per_sm=4).launch
    assert scalar.grid == ("min(ceil_div(n, block.x), sm_count * 4)",)
    assert spec_expr.evaluate(capped.grid[0], {"n": 1 << 20, "block": (256, 1, 1),
                                               "sm_count": 132}) == 1024
    with pytest.raises(ValueError, match="blocks_per_sm must be one of"):
        vectorize_gridstride.apply(ctx, blocks_per_sm=3)


def test_bound_uses_the_scalar_value_expression():
    # squares guards with its scalar parameter n, whose value is the size 'count'
    ctx = context("elementwise.cu", "squares")
    assert vectorize_gridstride.apply(ctx, blocks_per_sm=None).launch.grid == \
        ("ceil_div(count, block.x * 4)",)


def test_widths_and_index_declarations():
    daxpy = vectorize_gridstride.apply(context("elementwise.cu", "daxpy_clamp"))
    text = _kernel_text(daxpy.source, "daxpy_clamp")
    # size_t stays size_t; a body of several statements runs once per lane on registers
    assert "for (size_t v1 = i; v1 < n / 2; v1 += stride) {" in text
    assert "alignas(16) double x_v[2];" in text
    assert "*reinterpret_cast<double2*>(x_v) = reinterpret_cast<const double2*>(x)[v1];" in text
    assert "reinterpret_cast<double2*>(y)[v1] = *reinterpret_cast<double2*>(y_v);" in text
    assert daxpy.tags == ("vec2+gridstride", "grid=8*SMs")
    scale = _kernel_text(vectorize_gridstride.apply(context("elementwise.cu", "scale")).source,
                         "scale")
    # a template element type T moves as 16 raw bytes
    assert "constexpr int kWidth = 16 / sizeof(T);" in scale
    assert "alignas(16) T y_v[kWidth];" in scale
    assert "*reinterpret_cast<int4*>(x_v) = reinterpret_cast<const int4*>(x)[v1];" in scale
    assert "*reinterpret_cast<int4*>(y_v) =" not in scale  # y is write-only: not loaded
    squares = _kernel_text(
        vectorize_gridstride.apply(context("elementwise.cu", "squares")).source, "squares")
    # i is used as a value, so each lane declares it; the macro is kept
    assert "const int i = v1 * 4 + k;" in squares
    assert "out_v[k] = SQR(in_v[k]) + (float)i;" in squares


def test_two_kernels_vectorized_in_one_file_define_no_helper_type():
    ctx = context("elementwise.cu", "saxpy")
    once = vectorize_gridstride.apply(ctx)
    ctx2 = ctx.rewritten(once.source, once.launch, "vectorize_gridstride")
    ctx3 = context("elementwise.cu", "iadd", text=ctx2.text)
    twice = vectorize_gridstride.apply(ctx3).source
    assert not re.search(r"\bstruct\b", twice)
    assert "int4 c4;" in _kernel_text(twice, "iadd")
    assert "float4 y4" in _kernel_text(twice, "saxpy")


@needs_nvcc
@pytest.mark.parametrize("kernel", POSITIVE)
@pytest.mark.parametrize("pass_", [vectorize_gridstride, gridstride], ids=lambda p: p.name)
def test_rewrites_compile_without_warnings(kernel, pass_):
    result = pass_.apply(context("elementwise.cu", kernel))
    compiled = compile_source(result.source)
    assert compiled.ok, compiled.stderr
    assert "warning" not in compiled.stderr, compiled.stderr


@needs_nvcc
@pytest.mark.parametrize("kernel,load,store", [
    ("saxpy", r"ld\.global(\.nc)?\.v4\.f32", r"st\.global\.v4\.f32"),
    ("daxpy_clamp", r"ld\.global(\.nc)?\.v2\.f64", r"st\.global\.v2\.f64"),
    ("iadd", r"ld\.global(\.nc)?\.v4\.u32", r"st\.global\.v4\.u32"),
])
def test_vector_instructions_in_ptx(kernel, load, store):
    ctx = context("elementwise.cu", kernel)
    before = compile_source(ctx.text, ptx=True)
    after = compile_source(vectorize_gridstride.apply(ctx).source, ptx=True)
    assert before.ok and after.ok, after.stderr
    assert not re.search(load, before.ptx)
    assert re.search(load, after.ptx), "no vector load in the rewritten kernel's PTX"
    assert re.search(store, after.ptx), "no vector store in the rewritten kernel's PTX"


def _grid(launch, size: str, n: int) -> tuple[int, int]:
    block = int(spec_expr.evaluate(launch.block[0], {}))
    env = {size: n, "block": (block, 1, 1), "sm_count": 2}
    return int(spec_expr.evaluate(launch.grid[0], env)), block


@host_sim.needs_gxx
@pytest.mark.parametrize("kernel", POSITIVE)
@pytest.mark.parametrize("pass_,blocks_per_sm", [(vectorize_gridstride, 8),
                                                 (vectorize_gridstride, None),
                                                 (gridstride, 4)],
                         ids=["vec-8", "vec-full", "scalar-4"])
def test_same_values_as_the_original_on_cpu(kernel, pass_, blocks_per_sm):
    ctx = context("elementwise.cu", kernel)
    size = ctx.spec.sizes[0].name
    result = pass_.apply(ctx, blocks_per_sm=blocks_per_sm)
    original = host_sim.build(host_sim.driver(ctx.text, kernel, ctx.spec, size))
    rewritten = host_sim.build(host_sim.driver(result.source, kernel, ctx.spec, size))
    pointers = sum(p.is_pointer for p in ctx.kernel.parameters)
    # misalignment masks: all aligned, all misaligned, each pointer alone misaligned
    masks = [0, (1 << pointers) - 1] + [1 << j for j in range(pointers)]
    # sizes: tiny, one short of / one past a vector, ragged, and larger than one grid pass
    for n in (1, 3, 4, 5, 1003, 20001):
        for mask in masks:
            base = host_sim.run(original, n, mask, *_grid(ctx.launch, size, n))
            new = host_sim.run(rewritten, n, mask, *_grid(result.launch, size, n))
            assert new == base, f"{kernel} n={n} misaligned={mask:b}: outputs differ"


@pytest.mark.parametrize("kernel,reason", [
    ("sum_atomic", "the spec marks the kernel as using atomics (a reduction)"),
    ("diff1", "reads 'x[i > 0 ? i - 1 : 0]' at line 19, not x[i] (neighbours or gathers: "
              "not an elementwise kernel)"),
    ("transpose", "2D kernel: it indexes with .y (the pass rewrites 1D elementwise kernels)"),
    ("escapes", "x is used as a pointer value ('load(x, i)' at line 50); the pass needs every "
                "access to be x[i]"),
    ("macro_hidden", "macro AXPY (used at line 56) refers to x, y; its accesses are hidden "
                     "from the pass"),
    ("strided", "already a grid-stride loop (line 61)"),
    ("tiled_copy", "expected the body to start with 'int i = blockIdx.x * blockDim.x + "
                   "threadIdx.x;', found '__shared__ float tile[TILE * TILE];' at line 67"),
    ("block_templ", "expected the body to start with 'int i = blockIdx.x * blockDim.x + "
                    "threadIdx.x;', found 'int i = blockIdx.x * BLOCK + threadIdx.x;' at line 83"),
])
def test_rejected_kernels_say_why(kernel, reason):
    ctx = context("rejects.cu", kernel)
    assert vectorize_gridstride.check(ctx) == reason
    assert gridstride.check(ctx) == reason
    with pytest.raises(PassNotApplicable, match=re.escape(f"vectorize_gridstride on {kernel}: ")):
        vectorize_gridstride.apply(ctx)


def test_conditional_output_blocks_vectors_only():
    ctx = context("rejects.cu", "relu_masked")
    assert vectorize_gridstride.check(ctx) == (
        "y is written under a condition or inside another statement ('y[i]' at line 27): a "
        "vector store would also write the elements the original leaves untouched")
    assert gridstride.check(ctx) is None  # a scalar loop writes exactly what the original does


def test_aliased_launch_blocks_vectors_only():
    ctx = context("rejects.cu", "aliased")
    assert vectorize_gridstride.check(ctx) == \
        "the launch at line 95 passes 'd' as both x and y: the pointers alias"
    assert gridstride.check(ctx) is None


SPEC = """
kernel k
size n = {size}
scalar n: int = n
in x: {xt}[n]
out y: {yt}[n]
block = {block}
grid = {grid}
"""


def _snippet(body: str, *, xt="float", yt="float", block="256", grid="ceil_div(n, block.x)",
             params="const float* x, float* y, int n", size="4096"):
    text = f"__global__ void k({params}) {{\n{body}\n}}\n"
    return context_with_spec(text, "k", SPEC.format(xt=xt, yt=yt, block=block, grid=grid,
                                                    size=size))


@pytest.mark.parametrize("body,reason", [
    ("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) { y[i] = x[i]; return; }",
     "the body has 'return;' at line 3; a grid-stride loop cannot leave early per element"),
    ("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) { i += 1; y[i] = x[i]; }",
     "the body changes i at line 3"),
    ("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = x[i] * threadIdx.x;",
     "the body uses threadIdx at line 3: it depends on which thread runs it, which the rewrite "
     "changes"),
    ("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) { y[i] = x[i]; __syncthreads(); }",
     "the body calls __syncthreads at line 3: threads cooperate, so elements cannot be moved "
     "between threads"),
    ("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[0] = x[i];",
     "reduction or scatter: writes 'y[0]' at line 3, not y[i]"),
    ("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i <= n) y[i] = x[i];",
     "expected the bounds guard 'if (i < n)' or 'if (i >= n) return;', found 'if (i <= n)' at line 3"),
    ("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = x[i];\n    y[0] = 0;",
     "statements follow the bounds guard at line 4; expected the guard to end the kernel"),
    ("    float i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[(int)i] = 0;",
     "the index i at line 2 has type 'float', expected an integer type"),
])
def test_snippets_rejected_with_reason(body, reason):
    assert vectorize_gridstride.check(_snippet(body)) == reason


def test_called_device_function_using_thread_index_is_rejected():
    text = ("__device__ float lane_bias(float v) { return v + threadIdx.x % 32; }\n"
            "__global__ void k(const float* x, float* y, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (i < n) y[i] = lane_bias(x[i]);\n}\n")
    ctx = context_with_spec(text, "k", SPEC.format(xt="float", yt="float", block="256", size="4096",
                                                   grid="ceil_div(n, block.x)"))
    assert gridstride.check(ctx) == ("the body calls lane_bias (line 4), which uses threadIdx: "
                                     "it depends on which thread runs it")


def test_two_byte_elements_are_not_vectorized():
    ctx = _snippet("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = x[i];",
                   xt="int16", yt="int16", params="const short* x, short* y, int n")
    assert vectorize_gridstride.check(ctx) == (
        "x holds 2-byte elements (int16); the pass vectorizes 4- and 8-byte elements and "
        "half/bfloat16 pairs")
    assert gridstride.check(ctx) is None


def test_spec_type_must_match_the_declared_type():
    ctx = _snippet("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = x[i];",
                   xt="double")
    assert vectorize_gridstride.check(ctx) == \
        "the spec says x holds double but the kernel declares float"


def test_2d_block_spec_is_rejected():
    ctx = _snippet("    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = x[i];",
                   block="16, 16")
    assert vectorize_gridstride.check(ctx) == "the spec's block (16, 16) is not 1D"


def test_mixed_element_sizes_use_the_widest():
    body = "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = (double)x[i];"
    ctx = _snippet(body, yt="double", params="const float* x, double* y, int n")
    result = vectorize_gridstride.apply(ctx)
    text = _kernel_text(result.source, "k")
    # 2 elements per access: float2 (8 bytes, aligned to 8) and double2 (16 bytes)
    assert "reinterpret_cast<size_t>(x) % 8 == 0 && reinterpret_cast<size_t>(y) % 16 == 0" in text
    assert "float2 x2 = reinterpret_cast<const float2*>(x)[v];" in text
    assert "y2.y = (double)x2.y;" in text
    assert result.tags[0] == "vec2+gridstride"


# -- gathers: reads at a data-dependent index stay scalar per lane (issue 14) ----------------

GATHER_SPEC = """
kernel {kernel}
size n = 1 << 24
size m = 1 << 22
scalar n: int = n
scalar scale: float = 0.5
in src: float[m]
in idx: int[n] range(0, m)
out out: float[n]
block = 256
grid = ceil_div(n, block.x)
"""


def _gather_example():
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent / "examples"
    return context_with_spec((root / "gather.cu").read_text(), "gather_scale",
                             (root / "gather.cu.spec").read_text(), "gather.cu")


def test_gather_vectorizes_index_and_output_and_keeps_the_gathers_scalar():
    ctx = _gather_example()
    assert vectorize_gridstride.check(ctx) is None
    result = vectorize_gridstride.apply(ctx, blocks_per_sm=8)
    assert _kernel_text(result.source, "gather_scale") == """\
__global__ void gather_scale(const float* src, const int* idx, float* out, float scale, int n)
{
    // float4/int4 loads/stores in a grid-stride loop; gathers stay scalar, 4 in flight per thread;
    // the tail, and every element when a pointer is unaligned, go one by one.
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    if (reinterpret_cast<size_t>(idx) % 16 == 0 && reinterpret_cast<size_t>(out) % 16 == 0) {
        for (int v = i; v < n / 4; v += stride) {
            int4 idx4 = reinterpret_cast<const int4*>(idx)[v];
            float4 out4;
            out4.x = scale * src[idx4.x];
            out4.y = scale * src[idx4.y];
            out4.z = scale * src[idx4.z];
            out4.w = scale * src[idx4.w];
            reinterpret_cast<float4*>(out)[v] = out4;
        }
        i += n / 4 * 4;
    }
    for (; i < n; i += stride) {
        out[i] = scale * src[idx[i]];
    }
}"""
    # src is gathered, not an operand: no alignment test for it
    assert "reinterpret_cast<size_t>(src)" not in result.source
    assert result.tags[0] == "vec4+gridstride"
    assert result.explanation.endswith(
        "the gathers (src[...], at indices loaded per element) stay scalar loads, 4 "
        "independent ones in flight per thread")
    assert result.launch.grid == ("min(ceil_div(n, block.x * 4), sm_count * 8)",)


def test_gather_through_a_loaded_local_runs_per_lane():
    text = ("__global__ void k(const float* src, const int* idx, float* out, float scale, int n)\n"
            "{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (i < n) {\n        int j = idx[i];\n        out[i] = scale * src[j];\n    }\n}\n")
    ctx = context_with_spec(text, "k", GATHER_SPEC.format(kernel="k"))
    src = _kernel_text(vectorize_gridstride.apply(ctx).source, "k")
    assert "*reinterpret_cast<int4*>(idx_v) = reinterpret_cast<const int4*>(idx)[v];" in src
    assert "int j = idx_v[k1];\n                out_v[k1] = scale * src[j];" in src


@pytest.mark.parametrize("body,reason,line", [
    # an in-place permutation: lanes read elements that other lanes store
    ("if (i < n) src[i] = scale * src[idx[i]];",
     "gathers 'src[idx[i]]' at line 4 from src, which the kernel also writes (line 4): a lane "
     "could read an element another lane stores", 4),
    ("if (i < n) {\n        out[i] = scale * src[idx[i]];\n        src[i] = 0.0f;\n    }",
     "gathers 'src[idx[i]]' at line 5 from src, which the kernel also writes (line 6): a lane "
     "could read an element another lane stores", 5),
    # the index array itself read off the thread's element: not a gather through idx[i]
    ("if (i < n) out[i] = src[idx[i + 1]];",
     "reads 'idx[i + 1]' at line 4, not idx[i] (neighbours or gathers: not an elementwise "
     "kernel)", 4),
])
def test_gather_from_a_written_buffer_is_refused(body, reason, line):
    from cudalens.optimizer.reasons import line_of
    params = "float* src, const int* idx, float* out, float scale, int n"
    text = (f"__global__ void k({params})\n{{\n"
            f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    {body}\n}}\n")
    spec = GATHER_SPEC.format(kernel="k")
    if "src[i] =" in body and "out[i]" not in body:
        spec = spec.replace("in src:", "inout src:").replace("out out: float[n]\n", "")
        text = text.replace("float* out, ", "")
    elif "src[i] = 0.0f" in body:
        spec = spec.replace("in src:", "inout src:")
    ctx = context_with_spec(text, "k", spec)
    got = vectorize_gridstride.check(ctx)
    assert got == reason and line_of(got) == line
    assert gridstride.check(ctx) == reason


@needs_nvcc
def test_gather_rewrite_ptx_has_vector_index_load_vector_store_and_no_local_memory():
    ctx = _gather_example()
    before = compile_source(ctx.text, ptx=True)
    after = compile_source(vectorize_gridstride.apply(ctx).source, ptx=True)
    assert before.ok and after.ok, after.stderr
    assert "warning" not in after.stderr, after.stderr
    load, store = r"ld\.global(\.nc)?\.v4\.u32", r"st\.global\.v4\.f32"
    assert not re.search(load, before.ptx) and not re.search(store, before.ptx)
    assert re.search(load, after.ptx), "no int4 load of idx"
    assert re.search(store, after.ptx), "no float4 store of out"
    assert ".local" not in after.ptx and "__local_depot" not in after.ptx
    # the gathers: 4 scalar float loads in the vector loop, 1 in the tail
    assert len(re.findall(r"ld\.global(\.nc)?\.f32", after.ptx)) >= 5


@block_sim.needs_gxx
@pytest.mark.parametrize("n", [1, 6, 1003])
@pytest.mark.parametrize("shift", [{}, {"idx": 1}, {"out": 3}, {"idx": 2, "out": 1, "src": 1}],
                         ids=["aligned", "idx+1", "out+3", "all"])
def test_gather_rewrite_computes_the_originals_outputs_checked(n, shift):
    ctx = _gather_example()
    result = vectorize_gridstride.apply(ctx)
    sizes = {"n": n, "m": 37}
    before = block_sim.run(ctx.text, "gather_scale", ctx.spec, sizes, checked=True,
                           shift=shift or None)
    after = block_sim.run(result.source, "gather_scale", ctx.spec, sizes, result.launch,
                          checked=True, shift=shift or None)
    assert after.buffers == before.buffers
    assert 77 not in before.buffers["out"][:n]  # every element written, by both
