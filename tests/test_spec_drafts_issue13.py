"""Drafts of real kernel shapes that were wrong (issue 13, item 5), rewritten here: 16-byte
packs of eight bf16 loaded before the store's check, an embedding whose block is a kernel
argument, indices reassigned around their check, elements passed to device functions by
reference, 2D-blocktiled SGEMM with its tile sizes picked in an if/else, and per-block partial
histograms with the grid in a host constant. Each test asserts the drafted fields and notes,
and that the draft is a valid spec for its kernel (through its text form)."""

from __future__ import annotations

import pytest

from cudalens.spec.host_locals import declarations
from cudalens.spec.model import KernelSpec
from cudalens.spec.parser import parse_spec
from cudalens.spec.resolve import sizes_for
from cudalens.spec.writer import format_spec

import spec_fields
from spec_fields import infer, scalars, sizes



def buffers(spec: KernelSpec) -> dict[str, tuple]:
    return spec_fields.buffers(spec, "role", "length", "low", "high")



def multiples(spec: KernelSpec) -> dict[str, str]:
    return {m.name: m.expr for m in spec.multiples}


# -- a. eight bf16 a thread through a 16-byte pack ---------------------------------------------

PACK8 = """\
#include <cuda_bf16.h>
struct alignas(16) Pack8 { __nv_bfloat16 h[8]; };

__global__ void axpb_bf16x8(__nv_bfloat16* y, const __nv_bfloat16* x, float a, float b, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    Pack8 in = reinterpret_cast<const Pack8*>(x)[idx];
    Pack8 out;
    for (int k = 0; k < 8; ++k)
        out.h[k] = __float2bfloat16(a * __bfloat162float(in.h[k]) + b);
    if (idx * 8 < N) reinterpret_cast<Pack8*>(y)[idx] = out;
}
HOST
"""

PACK8_HOST = """\
void axpb(__nv_bfloat16* y, const __nv_bfloat16* x, float a, float b, int N) {
    int threads = 256;
    int blocks = (N / 8 + threads - 1) / threads;
    axpb_bf16x8<<<blocks, threads>>>(y, x, a, b, N);
}"""


def test_a_pack_loaded_before_the_store_check_keeps_n_whole_blocks_of_packs():
    spec = infer(PACK8.replace("HOST", PACK8_HOST))
    assert buffers(spec) == {"y": ("out", "N", None, None), "x": ("in", "N", None, None)}
    assert sizes(spec) == {"N": "1 << 24"} and multiples(spec) == {"N": "2048"}
    assert spec.launch.block == ("256",) and spec.launch.grid == ("ceil_div(N, 2048)",)
    assert ("multiple N = 2048: 'reinterpret_cast<Pack8*>(y)[idx]' moves 8 elements (16 bytes) "
            "from an index checked against N in steps of 8, so N stays a multiple of 8 (whole "
            "vectors: a ragged N would read or write past its end); and the launch covers N "
            "with whole blocks of 2048 elements with no bounds check on some access, so the "
            "ragged size stays a multiple of that") in spec.notes
    reparsed = parse_spec(format_spec(spec), "draft.spec")[spec.kernel]
    ragged = sizes_for(reparsed, "ragged")["N"]
    assert ragged != sizes_for(reparsed, "nominal")["N"] and ragged % 2048 == 0


def test_a_pack_under_its_check_keeps_n_a_multiple_of_eight():
    body = PACK8.replace("HOST", "").replace(
        "    Pack8 in = reinterpret_cast<const Pack8*>(x)[idx];\n", "").replace(
        "    for (int k", "    if (idx * 8 >= N) return;\n"
                       "    Pack8 in = reinterpret_cast<const Pack8*>(x)[idx];\n    for (int k")
    spec = infer(body)
    assert buffers(spec) == {"y": ("out", "N", None, None), "x": ("in", "N", None, None)}
    assert multiples(spec) == {"N": "8"}
    assert "multiple N = 8: 'reinterpret_cast<Pack8*>(y)[idx]' moves 8 elements (16 bytes) " \
        "from an index checked against N in steps of 8, so N stays a multiple of 8 (whole " \
        "vectors: a ragged N would read or write past its end)" in spec.notes


def test_an_unchecked_int4_pack_with_no_launch_counts_eight_elements_a_thread():
    spec = infer("""\
#include <cuda_bf16.h>
__global__ void copy_bf16x8(__nv_bfloat16* dst, const __nv_bfloat16* src) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    *reinterpret_cast<int4*>(dst + i * 8) = *reinterpret_cast<const int4*>(src + i * 8);
}
""")
    assert buffers(spec) == {"dst": ("out", "8 * n", None, None),
                             "src": ("in", "8 * n", None, None)}
    assert spec.launch.grid == ("ceil_div(n, block.x)",) and multiples(spec) == {"n": "256"}
    assert any(n.startswith("length of src assumed 8 * n: ") and n.endswith(
        "each of the n threads the draft's grid covers reaches 8 elements on "
        "('*reinterpret_cast<const int4*>(src + i * 8)')") for n in spec.notes), spec.notes


def test_an_int4_pack_under_a_floor_launch_takes_the_launch():
    spec = infer("""\
#include <cuda_bf16.h>
__global__ void add_bf16x8(__nv_bfloat16* c, const __nv_bfloat16* a, const __nv_bfloat16* b,
                           int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int4 pa = *reinterpret_cast<const int4*>(a + idx * 8);
    int4 pb = *reinterpret_cast<const int4*>(b + idx * 8);
    const __nv_bfloat16* ea = reinterpret_cast<const __nv_bfloat16*>(&pa);
    const __nv_bfloat16* eb = reinterpret_cast<const __nv_bfloat16*>(&pb);
    int4 pc;
    __nv_bfloat16* ec = reinterpret_cast<__nv_bfloat16*>(&pc);
    for (int k = 0; k < 8; ++k) ec[k] = __hadd(ea[k], eb[k]);
    *reinterpret_cast<int4*>(c + idx * 8) = pc;
}
void add(__nv_bfloat16* c, const __nv_bfloat16* a, const __nv_bfloat16* b, int N) {
    add_bf16x8<<<N / 8 / 128, 128>>>(c, a, b, N);
}
""")
    assert buffers(spec) == {"c": ("out", "N", None, None), "a": ("in", "N", None, None),
                             "b": ("in", "N", None, None)}
    assert spec.launch.grid == ("N / 1024",) and spec.launch.block == ("128",)


# -- b. an embedding launched with the channels as its block ---------------------------------

ENCODER = """\
__global__ void embed(float* out, const int* ids, const float* wte, int B, int T, int C) {
    int token = blockIdx.x;
    int c = threadIdx.x;
    out[token * C + c] = wte[ids[token] * C + c];
}
void embed_forward(float* out, const int* ids, const float* wte, int B, int T, int C) {
    embed<<<B * T, C>>>(out, ids, wte, B, T, C);
}
"""


def test_an_embedding_takes_its_block_from_the_launch_and_bounds_its_ids():
    spec = infer(ENCODER)
    assert spec.launch.block == ("C",) and spec.launch.grid == ("B * T",)
    assert buffers(spec) == {"out": ("out", "B * T * C", None, None),
                             "ids": ("in", "B * T", "0", "n_wte"),
                             "wte": ("in", "C * n_wte", None, None)}
    assert sizes(spec)["C"] == "256"
    assert scalars(spec) == {"B": "B", "T": "T", "C": "C"}
    assert "size C = 256: the launch's block.x (line 7), so at most 1024; GUESS, set it" \
        in spec.notes
    assert "block C: from the launch at line 7, which passes the kernel's own argument as the " \
        "block, so threadIdx is below it" in spec.notes
    assert "range of ids set to [0, n_wte): its values index rows of wte" in spec.notes


def test_an_embedding_checking_its_ids_against_a_vocabulary_size_ranges_them_below_it():
    spec = infer("""\
__global__ void embed(float* out, const int* ids, const float* wte, int B, int T, int C, int V) {
    int token = blockIdx.x;
    int id = ids[token];
    if (id < V) out[token * C + threadIdx.x] = wte[id * C + threadIdx.x];
}
void embed_forward(float* out, const int* ids, const float* wte, int B, int T, int C, int V) {
    embed<<<B * T, C>>>(out, ids, wte, B, T, C, V);
}
""")
    assert spec.launch.block == ("C",) and spec.launch.grid == ("B * T",)
    assert buffers(spec) == {"out": ("out", "B * T * C", None, None),
                             "ids": ("in", "B * T", "0", "V"),
                             "wte": ("in", "C * V", None, None)}
    assert "range of ids set to [0, V): its values are checked against V before they index " \
        "wte ('wte[id * C + threadIdx.x]'), and a negative one would pass the check" in spec.notes


def test_an_embedding_launched_with_literal_sizes_keeps_its_block_symbolic():
    spec = infer(ENCODER.replace(
        "void embed_forward(float* out, const int* ids, const float* wte, int B, int T, int C) {",
        "int main() {\n    int B = 8, T = 1024, C = 768;\n    float *out, *wte; int* ids;"))
    assert spec.launch.block == ("C",)
    assert sizes(spec) == {"B": "8", "T": "1024", "C": "768", "n_wte": "1024"}
    assert buffers(spec)["out"] == ("out", "B * T * C", None, None)
    assert buffers(spec)["wte"] == ("in", "C * n_wte", None, None)


# -- c. indices reassigned around their check -------------------------------------------------

@pytest.mark.parametrize("change, length", [
    ("i = i * 2;", "n"),  # before the check: the check bounds the final value
    ("i <<= 1;", "n"),
    ("i += 3;", "n"),
])
def test_an_index_reassigned_before_its_check_follows_the_final_value(change, length):
    spec = infer(f"""\
__global__ void k(float* out, const float* in, float s, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    {change}
    if (i < n) out[i] = in[i] * s;
}}
""")
    assert buffers(spec) == {"out": ("out", length, None, None),
                             "in": ("in", length, None, None)}


@pytest.mark.parametrize("change, length", [
    ("i = i * 2;", "2 * n - 1"),  # after the check: the check bounds the old value
    ("i *= 2;", "2 * n - 1"),
    ("i *= 2; i += 1;", "2 * n"),
    ("i <<= 2;", "4 * n - 3"),
])
def test_an_index_reassigned_after_its_check_follows_the_new_value(change, length):
    spec = infer(f"""\
__global__ void spread(float* out, const float* in, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{
        {change}
        out[i] = in[i];
    }}
}}
""")
    assert buffers(spec) == {"out": ("out", length, None, None),
                             "in": ("in", length, None, None)}


def test_an_offset_added_before_the_check_and_taken_off_the_store_is_drafted_small():
    spec = infer("""\
__global__ void shifted(float* out, const float* in, int n, int offset) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    i += offset;
    if (i >= n) return;
    out[i - offset] = in[i];
}
""")
    assert buffers(spec) == {"out": ("out", "n - offset", None, None),
                             "in": ("in", "n", None, None)}
    assert sizes(spec) == {"n": "1 << 24", "offset": "1"}
    assert "size offset = 1: only subtracted in lengths (an offset); GUESS, set it" in spec.notes


# -- d. elements passed by reference ----------------------------------------------------------

@pytest.mark.parametrize("helper, role", [
    ("__device__ void acc(float& dst, float v) { dst += v; }", "inout"),
    ("__device__ void acc(float &dst, float v) { dst = dst * 0.5f + v; }", "inout"),
    ("__device__ void acc(float& dst, float v) { dst = v; }", "out"),
])
def test_an_element_passed_by_reference_is_written_as_the_helper_writes_it(helper, role):
    spec = infer(f"""\
{helper}
__device__ float twice(const float& x) {{ return 2.0f * x; }}
__global__ void accumulate(float* out, float* in, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) acc(out[i], twice(in[i]));
}}
""")
    assert buffers(spec) == {"out": (role, "n", None, None), "in": ("in", "n", None, None)}
    assert "in: in: not const, but never written" in spec.notes
    how = "reads and writes" if role == "inout" else "writes"
    assert f"out: {role}: an element is passed by reference to acc (line 5), which {how} it" \
        in spec.notes


# -- e. 2D blocktiling SGEMM, tiles picked in an if/else --------------------------------------

SGEMM = """\
#define CEIL_DIV(M, N) (((M) + (N) - 1) / (N))

template <const int BM, const int BN, const int BK, const int TM, const int TN>
__global__ void sgemm_tiled2d(int M, int N, int K, float alpha, const float* A, const float* B,
                              float beta, float* C) {
    const uint row0 = blockIdx.y * BM;
    const uint col0 = blockIdx.x * BN;
    const uint threads = (BM * BN) / (TM * TN);
    const uint tr = threadIdx.x / (BN / TN);
    const uint tc = threadIdx.x % (BN / TN);
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    A += row0 * K;
    B += col0;
    C += row0 * N + col0;
    const uint ar = threadIdx.x / BK, ac = threadIdx.x % BK, astep = threads / BK;
    const uint br = threadIdx.x / BN, bc = threadIdx.x % BN, bstep = threads / BN;
    float acc[TM * TN] = {0.0f};
    for (uint k0 = 0; k0 < K; k0 += BK) {
        for (uint off = 0; off < BM; off += astep)
            As[(ar + off) * BK + ac] = A[(ar + off) * K + ac];
        for (uint off = 0; off < BK; off += bstep)
            Bs[(br + off) * BN + bc] = B[(br + off) * N + bc];
        __syncthreads();
        A += BK;
        B += BK * N;
        for (uint d = 0; d < BK; ++d)
            for (uint m = 0; m < TM; ++m)
                for (uint n = 0; n < TN; ++n)
                    acc[m * TN + n] += As[(tr * TM + m) * BK + d] * Bs[d * BN + tc * TN + n];
        __syncthreads();
    }
    for (uint m = 0; m < TM; ++m)
        for (uint n = 0; n < TN; ++n)
            C[(tr * TM + m) * N + tc * TN + n] =
                alpha * acc[m * TN + n] + beta * C[(tr * TM + m) * N + tc * TN + n];
}

void run_sgemm_tiled2d(int M, int N, int K, float alpha, float* A, float* B, float beta,
                       float* C) {
    const uint BK = 8;
    const uint TM = 8;
    const uint TN = 8;
    if (M >= LIMIT && N >= LIMIT) {
        const uint BM = 128;
        const uint BN = 128;
        dim3 gridDim(CEIL_DIV(N, BN), CEIL_DIV(M, BM));
        dim3 blockDim((BM * BN) / (TM * TN));
        sgemm_tiled2d<BM, BN, BK, TM, TN><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
    } else {
        const uint BM = 64;
        const uint BN = 64;
        dim3 gridDim(CEIL_DIV(N, BN), CEIL_DIV(M, BM));
        dim3 blockDim((BM * BN) / (TM * TN));
        sgemm_tiled2d<BM, BN, BK, TM, TN><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
    }
}
"""


def test_uint_host_locals_are_integer_locals():
    assert [d[:2] for d in declarations("const uint BM = 128; uint t = 2 * BM;")] == [
        ("BM", "128"), ("t", "2 * BM")]


def test_sgemm_2d_blocktiling_takes_the_branch_the_drafted_sizes_take():
    spec = infer(SGEMM.replace("LIMIT", "128"))
    assert spec.kernel == "sgemm_tiled2d<128, 128, 8, 8, 8>"
    assert buffers(spec) == {"A": ("in", "M * K", None, None), "B": ("in", "N * K", None, None),
                             "C": ("inout", "M * N", None, None)}
    assert spec.launch.block == ("256",)
    assert spec.launch.grid == ("ceil_div(N, 128)", "ceil_div(M, 128)")
    assert multiples(spec) == {"M": "128", "N": "128", "K": "8"}
    assert ("template arguments of sgemm_tiled2d<BM, BN, BK, TM, TN> differ between the "
            "launches (BM = 128 (line 49), 64 (line 55); BN = 128 (line 49), 64 (line 55)): "
            "drafted for the first, at line 49, under 'if (M >= 128 && N >= 128)': the drafted "
            "sizes (M = 4096, N = 4096) take that branch; other sizes take another instance "
            "(name it with --kernel 'NAME<ARGS>')") in spec.notes


def test_sgemm_2d_blocktiling_marks_a_branch_the_sizes_do_not_take():
    spec = infer(SGEMM.replace("LIMIT", "8192"))
    assert spec.kernel == "sgemm_tiled2d<128, 128, 8, 8, 8>"
    assert any(n.endswith("under 'if (M >= 8192 && N >= 8192)'; GUESS: the drafted sizes "
                          "(M = 4096, N = 4096) do not take that branch, so set sizes that do or "
                          "name the instance with --kernel 'NAME<ARGS>'") for n in spec.notes)


def test_sgemm_2d_blocktiling_other_instance_fits_its_tiles():
    spec = infer(SGEMM.replace("LIMIT", "128"), instance="sgemm_tiled2d<64, 64, 8, 8, 8>")
    assert buffers(spec) == {"A": ("in", "M * K", None, None), "B": ("in", "N * K", None, None),
                             "C": ("inout", "M * N", None, None)}
    assert spec.launch.block == ("64",)
    assert spec.launch.grid == ("ceil_div(N, 64)", "ceil_div(M, 64)")
    assert "block 64: the launch at line 55" in spec.notes


# -- f. per-block partial histograms ----------------------------------------------------------

HIST = """\
#define BINS 256

__global__ void hist_blocks(unsigned int* partial, const unsigned char* data, int n) {
    __shared__ unsigned int s[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) s[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&s[data[i]], 1u);
    __syncthreads();
    for (int bin = threadIdx.x; bin < BINS; bin += blockDim.x)
        partial[blockIdx.x * BINS + bin] = s[bin];
}

__global__ void hist_merge(unsigned int* hist, const unsigned int* partial, int partials) {
    int bin = blockIdx.x * blockDim.x + threadIdx.x;
    if (bin < BINS) {
        unsigned int sum = 0;
        for (int p = 0; p < partials; ++p) sum += partial[p * BINS + bin];
        hist[bin] = sum;
    }
}

void histogram(unsigned int* hist, unsigned int* partial, const unsigned char* data, int n) {
    const TYPE PARTIALS = 240;
    hist_blocks<<<PARTIALS, 192>>>(partial, data, n);
    hist_merge<<<1, BINS>>>(hist, partial, PARTIALS);
}
"""


@pytest.mark.parametrize("type_", ["int", "uint", "unsigned int"])
def test_partial_histograms_take_the_grid_from_a_host_constant(type_):
    source = HIST.replace("TYPE", type_)
    spec = infer(source, "hist_blocks")
    assert spec.launch.grid == ("240",) and spec.launch.block == ("192",)
    assert buffers(spec)["partial"] == ("out", "61440", None, None)
    assert "length of partial = 61440: blockIdx.x in 'partial[blockIdx.x * BINS + bin]' runs " \
        "over the launch's grid (240 blocks along x, line 25)" in spec.notes
    assert not any("GUESS" in n for n in spec.notes if "grid" in n)
    merge = infer(source, "hist_merge")
    assert sizes(merge) == {"partials": "240"}
    assert buffers(merge)["partial"] == ("in", "256 * partials", None, None)
