"""Pass ``vectorize_gridstride`` on half-precision kernels: ``half2`` and ``__nv_bfloat162``
pairs (``cudalens.optimizer.half_pairs``).

The kernels are the half and bfloat16 spellings of ``data/variants/vectorize_gridstride/``
(with their ``.cu.spec``, half/bfloat16 types). Checked: the rewrite's text (pair loads and
stores through ``reinterpret_cast``, a paired intrinsic where the body allows, the scalar
tail, the sm_80 guard for bfloat16), nvcc (sm_90) compiling it into paired instructions
(``fma.rn.f16x2``, ``fma.rn.bf16x2``) and one 4-byte access per pair, the bfloat16 rewrite compiling for
sm_75 too (the guard leaves it the scalar loop), the outputs on the CPU (every thread
simulated, ragged sizes, aligned and misaligned pointers, a capped grid) against the
original's, and the reasons for what is refused.
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from cudalens.optimizer.passes import vectorize_gridstride
from cudalens.source.parser import parse_source

import host_sim
from nvcc_util import compile_source, needs_nvcc, nvcc_path
from optimizer_fixtures import context_with_spec
from variant_corpus import context, variants

HALF_VARIANTS = {v.path.name: v for v in variants() if v.pass_name == "vectorize_gridstride"
                 and v.path.name.startswith(("half_", "bf16_"))}
# variant -> the paired intrinsics of its body (() = moved as pairs, computed per element)
PAIRED = {"half_saxpy_ops.cu": ("__hfma2",), "half_intrinsics_out.cu": ("__hmul2", "__hadd2"),
          "half_float_math.cu": (), "bf16_axpby.cu": ("__hmul2", "__hfma2"),
          "bf16_bias_relu.cu": (), "bf16_float_locals.cu": ()}
GUARD = "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800"


def _kernel_text(source: str, kernel: str) -> str:
    k = parse_source(source, "x.cu").kernel(kernel)
    return source.encode()[k.start_byte:k.end_byte].decode()


def _apply(name: str):
    ctx = context(HALF_VARIANTS[name])
    return ctx, vectorize_gridstride.apply(ctx)


def test_the_corpus_has_half_and_bfloat16_spellings():
    assert sorted(HALF_VARIANTS) == sorted(PAIRED)
    types = {name: {d.type for d in context(v).spec.params if hasattr(d, "role")}
             for name, v in HALF_VARIANTS.items()}
    assert {t for name, ts in types.items() if name.startswith("half_") for t in ts} == {"half"}
    assert {t for name, ts in types.items() if name.startswith("bf16_") for t in ts} == \
        {"bfloat16"}


def test_half_saxpy_is_one_hfma2_per_pair():
    ctx, result = _apply("half_saxpy_ops.cu")
    assert _kernel_text(result.source, "hsaxpy") == """\
__global__ void hsaxpy(int n, half a, const half* x, half* y)
{
    // half2 loads/stores, paired math (__hfma2), in a grid-stride loop;
    // the tail, and every element when a pointer is unaligned, go one by one.
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    if (reinterpret_cast<size_t>(x) % 4 == 0 && reinterpret_cast<size_t>(y) % 4 == 0) {
        const half2 a2 = __half2half2(a);
        for (int v = i; v < n / 2; v += stride) {
            half2 x2 = reinterpret_cast<const half2*>(x)[v];
            half2 y2 = reinterpret_cast<half2*>(y)[v];
            reinterpret_cast<half2*>(y)[v] = __hfma2(a2, x2, y2);
        }
        i += n / 2 * 2;
    }
    for (; i < n; i += stride) {
        y[i] = a * x[i] + y[i];
    }
}"""
    assert result.tags == ("vec2+gridstride", "grid=8*SMs")
    assert result.launch.grid == ("min(ceil_div(n, block.x * 2), sm_count * 8)",)
    assert result.explanation.startswith(
        "half-precision pairs (half2: 2 x half per 4-byte load/store) and paired arithmetic "
        "(__hfma2: one instruction for both elements), in a grid-stride loop with a scalar "
        "tail: 2x fewer memory and arithmetic instructions; ")


def test_users_spelling_and_the_scalar_intrinsics_are_kept_paired():
    _, result = _apply("half_intrinsics_out.cu")
    text = _kernel_text(result.source, "scale_add_h")
    assert "  const __half2 alpha2 = __half2half2(alpha);\n" in text  # two-space indent kept
    assert "__half2 y2 = reinterpret_cast<const __half2*>(y)[v];" in text
    assert "reinterpret_cast<__half2*>(out)[v] = __hadd2(__hmul2(alpha2, x2), y2);" in text
    assert "for (; idx < n; idx += stride) {\n    out[idx] = __hadd(__hmul(alpha, x[idx]), " \
           "y[idx]);" in text


def test_bfloat16_pairs_sit_under_the_sm80_guard():
    _, result = _apply("bf16_axpby.cu")
    text = _kernel_text(result.source, "axpby_bf16")
    lines = text.splitlines()
    assert lines.count(GUARD) == 1 and lines.count("#endif") == 1
    guarded = lines[lines.index(GUARD) + 1:lines.index("#endif")]
    assert guarded[0].strip().startswith("if (reinterpret_cast<size_t>(x) % 4 == 0")
    assert "        const __nv_bfloat162 alpha2 = __bfloat162bfloat162(alpha);" in guarded
    assert "        const __nv_bfloat162 beta2 = __bfloat162bfloat162(beta);" in guarded
    assert "            reinterpret_cast<__nv_bfloat162*>(y)[v] = " \
           "__hfma2(alpha2, x2, __hmul2(beta2, y2));" in guarded
    # the scalar loop is outside the guard: before sm_80 it takes every element
    assert lines[lines.index("#endif") + 1] == "    for (; i < n; i += stride) {"
    assert "before sm_80" in text.split("\n")[4]
    assert result.explanation.endswith("; the paired loop is compiled for sm_80 and newer "
                                       "(bfloat16 pair arithmetic), older GPUs take the scalar "
                                       "loop")


@pytest.mark.parametrize("name", ["half_float_math.cu", "bf16_bias_relu.cu"])
def test_float_math_runs_per_element_of_the_pair(name):
    ctx, result = _apply(name)
    text = _kernel_text(result.source, ctx.kernel.name)
    if name == "half_float_math.cu":
        assert "            y2.x = __float2half(tanhf(__half2float(x2.x)) * s);\n" \
               "            y2.y = __float2half(tanhf(__half2float(x2.y)) * s);\n" in text
    else:
        assert "out2.x = __float2bfloat16(fmaxf(__bfloat162float(in2.x) + " \
               "__bfloat162float(bias2.x), 0.0f));" in text
        assert GUARD in text
    assert "paired math" not in text
    assert "each element of the pair computed as written" in result.explanation


def test_comment_is_at_most_two_short_lines():
    for name in PAIRED:
        ctx, result = _apply(name)
        text = _kernel_text(result.source, ctx.kernel.name)
        comments = [l for l in text.splitlines() if l.strip().startswith("//")]
        assert len(comments) == 2 and all(len(l) <= 100 for l in comments), (name, comments)


@needs_nvcc
@pytest.mark.parametrize("name", sorted(PAIRED))
def test_nvcc_compiles_paired_instructions_and_4_byte_accesses(name):
    _, result = _apply(name)
    compiled = compile_source(result.source, ptx=True)
    assert compiled.ok, compiled.stderr
    assert "warning" not in compiled.stderr, compiled.stderr
    ptx = compiled.ptx
    # one 4-byte access per pair: a 32-bit word, or a vector of two 16-bit lanes
    assert re.search(r"\bld\.global(\.nc)?\.(u32|b32|v2\.u16|v2\.b16)\b", ptx), name
    assert re.search(r"\bst\.global\.(u32|b32|v2\.u16|v2\.b16)\b", ptx), name
    kind = "bf16x2" if name.startswith("bf16_") else "f16x2"
    paired = set(re.findall(rf"\b(fma|mul|add|sub)\.rn\.{kind}\b|\b(fma|mul|add|sub)\.{kind}\b",
                            ptx))
    ops = {a or b for a, b in paired}
    want = {"__hfma2": "fma", "__hmul2": "mul", "__hadd2": "add"}
    if PAIRED[name]:
        assert {want[o] for o in PAIRED[name]} <= ops | {"fma"}, (name, ops)
        assert "fma" in ops or "add" in ops, (name, ops)


@needs_nvcc
def test_bfloat16_rewrite_compiles_before_sm80():
    _, result = _apply("bf16_axpby.cu")
    with tempfile.TemporaryDirectory(prefix="cudalens-bf16-") as tmp:
        src = Path(tmp) / "k.cu"
        src.write_text(result.source, encoding="utf-8")
        proc = subprocess.run([nvcc_path(), "-ptx", "-arch=sm_75", "-o", str(Path(tmp) / "k.ptx"),
                               str(src)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        ptx = (Path(tmp) / "k.ptx").read_text()
    assert "bf16x2" not in ptx  # the guard compiled the paired loop out


def _values(out: str, dtype: str) -> dict[str, list[float]]:
    fmt = "<e" if dtype == "half" else None
    got: dict[str, list[float]] = {}
    for line in out.splitlines():
        name, _, bits = line.split()
        b = int(bits, 16) & 0xFFFF
        v = struct.unpack(fmt, struct.pack("<H", b))[0] if fmt else \
            struct.unpack("<f", struct.pack("<I", b << 16))[0]
        got.setdefault(name, []).append(v)
    return got


@host_sim.needs_gxx
@pytest.mark.parametrize("name", sorted(PAIRED))
def test_outputs_match_the_original_on_cpu(name):
    ctx, result = _apply(name)
    size = ctx.spec.sizes[0].name
    dtype = "half" if name.startswith("half_") else "bfloat16"
    tol = 1e-2 if dtype == "half" else 2 ** -6  # the spec's default tolerances (README)
    original = host_sim.build(host_sim.driver(ctx.text, ctx.kernel.name, ctx.spec, size))
    rewritten = host_sim.build(host_sim.driver(result.source, ctx.kernel.name, ctx.spec, size))
    pointers = sum(1 for p in ctx.kernel.parameters if p.is_pointer)
    for n in (1, 2, 7, 1003):
        for mask in (0, 1, (1 << pointers) - 1):
            grid = max(1, min(-(-n // 256), 2))  # a capped grid: threads loop
            want = _values(host_sim.run(original, n, mask, -(-n // 128), 128), dtype)
            got = _values(host_sim.run(rewritten, n, mask, grid, 256), dtype)
            assert want.keys() == got.keys()
            for buf in want:
                far = [(k, a, b) for k, (a, b) in enumerate(zip(want[buf], got[buf]))
                       if abs(a - b) > tol * (abs(a) + 1)]
                assert not far, f"n={n} mask={mask:b} {buf}: {far[:5]}"
                # the elements past n (guards) are untouched
                assert want[buf][n:] == got[buf][n:], f"n={n} mask={mask:b} {buf}"


SPEC = """
kernel k
size n = 4096
scalar n: int = n
in x: {xt}[n]
inout y: {yt}[n]
block = 256
grid = ceil_div(n, block.x)
"""


def test_half_mixed_with_float_is_refused_with_the_operands():
    text = ("#include <cuda_fp16.h>\n__global__ void k(const half* x, float* y, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (i < n) y[i] += __half2float(x[i]);\n}\n")
    ctx = context_with_spec(text, "k", SPEC.format(xt="half", yt="float"))
    assert vectorize_gridstride.check(ctx) == (
        "half-precision pairs need one 2-byte float type for every operand, found x (half), "
        "y (float)")


def test_half_mixed_with_bfloat16_is_refused():
    text = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
            "__global__ void k(const half* x, __nv_bfloat16* y, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (i < n) y[i] = __float2bfloat16(__half2float(x[i]));\n}\n")
    ctx = context_with_spec(text, "k", SPEC.format(xt="half", yt="bfloat16"))
    assert vectorize_gridstride.check(ctx) == (
        "half-precision pairs need one 2-byte float type for every operand, found x (half), "
        "y (bfloat16)")


HAND = Path(__file__).resolve().parent.parent / "benchmarks" / "handwritten"


def test_half_saxpy_rewrite_is_within_the_bound_of_a_hand_written_version():
    sys.path.insert(0, str(HAND.parent))
    import rewrite_lines as rl  # noqa: PLC0415 (benchmarks/rewrite_lines.py)

    ctx, result = _apply("half_saxpy_ops.cu")
    hand = (HAND / "half_saxpy_ops.vectorize_gridstride.cu").read_text(encoding="utf-8")
    rewrite = rl.code_lines(rl.kernel_text(result.source, "hsaxpy"))
    written = rl.code_lines(rl.kernel_text(hand, "hsaxpy"))
    assert (rewrite, written) == (19, 13)
    assert rewrite / written <= rl.RATIO_BOUND
