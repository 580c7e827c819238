"""Drafts whose values are in the host code that launches the kernel (issue 13 item 5, the
new-user report's item 24, R5): dynamic shared memory from a host local built with a
function-like macro and sizeof, the value a ``switch`` case fixes at a launch, a template
instance's own launch, and the guess when the shared size does not translate. Kernels written
here in the shapes ggml's soft_max launch takes."""

from __future__ import annotations

import pytest

from cudalens.spec.expr import evaluate
from cudalens.spec.host_locals import caller_arguments, case_bindings, function_int_params
from cudalens.spec.infer import _fold_bits
from spec_fields import buffers, infer, line_of, scalars, sizes

ROUND_DIV = "#define ROUND_UP(x, n) (((x) + (n) - 1) / (n) * (n))"
ROUND_MASK = "#define ROUND_UP(x, n) (((x) + (n) - 1) & ~((n) - 1))"

SOFTMAX = """#include <math.h>
#define WARP 32
ROUND

template <bool cache, int ncols_t, int bs_t>
__global__ void row_softmax(const float *x, float *y, const int ncols_arg) {
    const int ncols = ncols_t == 0 ? ncols_arg : ncols_t;
    const int bs = bs_t == 0 ? blockDim.x : bs_t;
    const int row = blockIdx.x;
    x += (long)row * ncols;
    y += (long)row * ncols;
    extern __shared__ float smem[];
    float *red = smem;
    float *vals = cache ? smem + WARP : y;
    float mx = -INFINITY;
    for (int c0 = 0; c0 < ncols; c0 += bs) {
        const int c = c0 + threadIdx.x;
        if (ncols_t == 0 && c >= ncols) break;
        const float v = x[c];
        vals[c] = v;
        mx = fmaxf(mx, v);
    }
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
    if (threadIdx.x % WARP == 0) red[threadIdx.x / WARP] = mx;
    __syncthreads();
    mx = red[0];
    for (int c0 = 0; c0 < ncols; c0 += bs) {
        const int c = c0 + threadIdx.x;
        if (ncols_t == 0 && c >= ncols) break;
        y[c] = expf(vals[c] - mx);
    }
}

static void row_softmax_launch(const float *x, float *y, const int ncols, const int nrows,
                               cudaStream_t st) {
    int nth = WARP;
    while (nth < ncols && nth < 1024) nth *= 2;
    const dim3 threads(nth, 1, 1);
    const dim3 blocks(nrows, 1, 1);
    const size_t smem_bytes = SMEM;
    switch (ncols) {
        case 32:
            row_softmax<true, 32, 32><<<blocks, threads, smem_bytes, st>>>(x, y, ncols);
            break;
        case 64:
            row_softmax<true, 64, 64><<<blocks, threads, smem_bytes, st>>>(x, y, ncols);
            break;
        default:
            row_softmax<true, 0, 0><<<blocks, threads, smem_bytes, st>>>(x, y, ncols);
            break;
    }
}
"""
PADDED = "(ROUND_UP(ncols, WARP) + WARP) * sizeof(float)"


def softmax(round_macro: str = ROUND_DIV, smem: str = PADDED) -> str:
    return SOFTMAX.replace("ROUND", round_macro, 1).replace("SMEM", smem)


def line_no(src: str, text: str) -> int:
    return next(i + 1 for i, ln in enumerate(src.splitlines()) if text in ln)


@pytest.mark.parametrize("macro, shared", [
    (ROUND_DIV, "((32 + 32 - 1) / 32 * 32 + 32) * 4"),
    (ROUND_MASK, "(32 + 32) * 4"),  # the mask folded: its operands are constants in case 32
])
def test_shared_from_host_local_with_macro_and_case(macro, shared):
    """Report item 24: ``smem_bytes`` is translated through the macro and sizeof, with ncols
    = 32 from the ``case 32`` the launch is in: 64 floats, the 32 reduction slots and the row;
    block 32 from the instance's block-size argument (R5)."""
    src = softmax(macro)
    spec = infer(src, "row_softmax", "row_softmax<true, 32, 32>")
    at = line_no(src, "row_softmax<true, 32, 32><<<")
    assert spec.launch.shared == shared
    assert evaluate(spec.launch.shared, {}) == 256
    assert f"shared = {shared}: from the launch at line {at} ('smem_bytes')" in spec.notes
    assert spec.launch.block == ("32",)
    assert line_of(spec, "block") == "block = 32"
    assert scalars(spec) == {"ncols_arg": "32"}
    assert (f"scalar ncols_arg = 32: from the host code (the launch at line {at} passes "
            f"'ncols' = 32, inside case 32 of switch (ncols))") in spec.notes
    assert not any("GUESS" in n for n in spec.notes if n.startswith(("shared", "scalar")))


def test_instance_reads_its_own_launch():
    """``row_softmax<true, 64, 64>`` is read from its own launch in ``case 64``, not the
    first one; the default instance's launch fixes no value, so ncols_arg is a GUESS and the
    shared size follows that guess (no fault: 1 column padded to a warp)."""
    src = softmax(ROUND_MASK)
    spec = infer(src, "row_softmax", "row_softmax<true, 64, 64>")
    at = line_no(src, "row_softmax<true, 64, 64><<<")
    assert spec.launch.shared == "(64 + 32) * 4"
    assert f"shared = (64 + 32) * 4: from the launch at line {at} ('smem_bytes')" in spec.notes
    assert spec.launch.block == ("64",)
    assert scalars(spec) == {"ncols_arg": "64"}
    spec = infer(src, "row_softmax", "row_softmax<true, 0, 0>")
    at = line_no(src, "row_softmax<true, 0, 0><<<")
    assert scalars(spec) == {"ncols_arg": "1"}
    assert (f"scalar ncols_arg = 1: GUESS (not a bound of any index, the launch at line {at} "
            f"passes 'ncols', a variable whose value is not known here), confirm it") \
        in spec.notes
    assert spec.launch.shared == "(32 + 32) * 4"
    assert f"shared = (32 + 32) * 4: from the launch at line {at} ('smem_bytes')" in spec.notes


def test_untranslated_shared_is_the_most_a_launch_gets():
    """A size from a function the draft cannot read gives the 48 KiB a launch gets without
    opting in (never less than the host's launch can pass), marked GUESS; the old guess of
    one float per thread (128 bytes) overran ``vals[c]`` = float 32 + c."""
    src = softmax(smem="bytes_for(ncols)")
    spec = infer(src, "row_softmax", "row_softmax<true, 32, 32>")
    at = line_no(src, "row_softmax<true, 32, 32><<<")
    assert spec.launch.shared == "49152"
    assert line_of(spec, "shared") == "shared = 49152  # GUESS: see the notes"
    assert (f"shared = 49152: 'smem_bytes' at the launch at line {at} could not be translated; "
            f"GUESS the most a launch gets without opting in (48 KiB), so the kernel cannot "
            f"index past it where the host's own launch could not either; set it to the "
            f"host's value") in spec.notes


def test_untranslated_shared_leaves_room_for_static_arrays_and_names_opt_in():
    src = softmax(smem="bytes_for(ncols)").replace(
        "    extern __shared__ float smem[];",
        "    __shared__ float stage[256];\n    extern __shared__ float smem[];").replace(
        "    switch (ncols) {",
        "    cudaFuncSetAttribute(row_softmax<true, 32, 32>, "
        "cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);\n    switch (ncols) {")
    spec = infer(src, "row_softmax", "row_softmax<true, 32, 32>")
    assert spec.launch.shared == str(48 * 1024 - 1024)
    note = next(n for n in spec.notes if n.startswith("shared = "))
    assert "(48 KiB less the 1024 bytes of static shared arrays)" in note
    assert note.endswith("the file raises cudaFuncAttributeMaxDynamicSharedMemorySize, so the "
                         "host may pass more: set it")


SWITCH = """void go(int k, int m) {
    switch (k) {
        case 8:
            A;
            break;
        case 16:
        case 24:
            B;
            break;
        case 32:
            C;
        case 40:
            D;
            break;
        case 48: {
            E;
            break;
        }
        case 56:
            k = 3;
            F;
            break;
        default:
            G;
    }
    H;
}
"""


@pytest.mark.parametrize("mark, found", [
    ("A", {"k": "8"}),
    ("B", {}),  # case 16 falls through to case 24
    ("C", {"k": "32"}),
    ("D", {}),  # reached from case 32 too
    ("E", {"k": "48"}),
    ("F", {}),  # k assigned after the label
    ("G", {}),  # default
    ("H", {}),  # after the switch
])
def test_case_bindings(mark, found):
    assert case_bindings(SWITCH, SWITCH.index(f"{mark};")) == found


def test_case_bindings_nested_switch():
    src = ("switch (a) { case 1: switch (b) { case 2: X; break; } break; "
           "case 3: Y; break; }")
    assert case_bindings(src, src.index("X;")) == {"a": "1", "b": "2"}
    assert case_bindings(src, src.index("Y;")) == {"a": "3"}


@pytest.mark.parametrize("text, folded", [
    ("((71 & ~31) + 32) * 4", "(64 + 32) * 4"),
    ("71 & ~31 + 32", "0"),  # C's precedence: & after +
    ("((40 + 32 - 1) & ~(32 - 1))", "64"),
    ("(C + 32 - 1) & ~(32 - 1)", "(C + 32 - 1) / 32 * 32"),
    ("~(32 - 1) & (C + 31)", "(C + 31) / 32 * 32"),
    ("(C + 31) & 7", None),  # not a rounding mask
    ("C | 1", None),
    ("C ^ 2", None),
    ("(C &", None),
])
def test_fold_bits(text, folded):
    assert _fold_bits(text) == folded


# -- grids named by the launching function's parameters (R6, ggml's norm) -------------------

NORM_STRIDED = """#define WARP 32
template <int bs>
__global__ void rms_rows(const float *x, float *y, const int ncols, const long s_row,
                         const long s_chan, const long s_samp, const float eps) {
    const int nch = gridDim.y, nrw = gridDim.x;
    const int samp = blockIdx.z, chan = blockIdx.y, row = blockIdx.x;
    x += samp * s_samp + chan * s_chan + row * s_row;
    y += ((samp * nch + chan) * nrw + row) * ncols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < ncols; c += bs) { const float v = x[c]; ss += v * v; }
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffff, ss, o);
    const float k = rsqrtf(ss / ncols + eps);
    for (int c = threadIdx.x; c < ncols; c += bs) y[c] = k * x[c];
}

static void rms_rows_launch(const float *x, float *y, const int ncols, const int nrows,
                            const int nchannels, const int nsamples, const long s_row,
                            const long s_chan, const long s_samp, const float eps,
                            cudaStream_t st) {
    const dim3 blocks_num(nrows, nchannels, nsamples);
    const dim3 block_dims(WARP, 1, 1);
    rms_rows<WARP><<<blocks_num, block_dims, 0, st>>>(x, y, ncols, s_row, s_chan, s_samp, eps);
}
"""


def test_a_3d_host_grid_of_the_launching_functions_parameters():
    """``dim3 blocks_num(nrows, nchannels, nsamples)`` is the grid, each a size; y's rows are
    found through gridDim, which is that grid's extent (before, y was drafted as long as x's
    strided reach and written past it)."""
    spec = infer(NORM_STRIDED)
    assert spec.launch.grid == ("nrows", "nchannels", "nsamples")
    assert [s.name for s in spec.sizes] == ["nrows", "nchannels", "nsamples", "ncols", "s_row",
                                            "s_chan", "s_samp"]
    lengths = buffers(spec, "length")
    assert lengths["y"] == ("ncols * nrows * nchannels * nsamples",)
    assert lengths["x"] == ("s_row * nrows + s_chan * nchannels + s_samp * nsamples + ncols "
                            "- s_row - s_chan - s_samp",)
    for axis, name in zip("xyz", ("nrows", "nchannels", "nsamples")):
        assert (f"grid.{axis} = {name}: from the launch at line 22; the body has no bounds "
                f"check along {axis}, so that grid and the block bound its indices") \
            in spec.notes


def test_a_host_grid_takes_the_value_a_caller_passes():
    src = """__global__ void rows(const float *x, float *out, int ncols) {
    int r = blockIdx.x; float s = 0.0f;
    for (int c = threadIdx.x; c < ncols; c += blockDim.x) s += x[r * ncols + c];
    if (threadIdx.x == 0) out[r] = s;
}
void launch(const float *x, float *out, int ncols, int nrows) {
    rows<<<nrows, 128>>>(x, out, ncols);
}
int main() {
    const int R = 3 * 512;
    launch(0, 0, 256, R);
    launch(0, 0, 512, 7);
}
"""
    spec = infer(src)
    assert sizes(spec) == {"nrows": "1536", "ncols": "256"}
    assert buffers(spec, "length") == {"x": ("ncols * nrows",), "out": ("nrows",)}
    assert ("size nrows = 1536: from the host code (the launch at line 7 takes its grid from "
            "'nrows', which the call at line 11 passes as 'R')") in spec.notes
    assert ("size ncols = 256: from the host code (the launch at line 7 passes 'ncols', which "
            "the call at line 11 passes as '256')") in spec.notes


def test_function_int_params_and_caller_arguments():
    src = ("static void go(const float *x, const int a, size_t b, float f, int *p,\n"
           "               unsigned int c, cudaStream_t s) {\n    K;\n}\n"
           "int main() { go(0, 1 + 2, n, 0.5f, 0, f(3, 4), 0); go(0, 9); }\n")
    at = src.index("K;")
    assert function_int_params(src, at) == ["a", "b", "c"]
    assert caller_arguments(src, at, "a") == [("1 + 2", src.index("go(0, 1")),
                                              ("9", src.index("go(0, 9"))]
    assert caller_arguments(src, at, "c") == [("f(3, 4)", src.index("go(0, 1"))]  # go(0, 9) has 2
    assert caller_arguments(src, at, "zz") == []


# -- an embedding's vocabulary from the host's allocation (issue 13 item 5) -------------------

EMBED = """__global__ void embed_rows(float* out, const int* ids, const float* table, int BT, int C) {
    int token = blockIdx.x;
    int c = threadIdx.x;
    out[token * C + c] = table[ids[token] * C + c];
}
void embed_rows_forward(float* out, const int* ids, const float* table, int BT, int C) {
    embed_rows<<<BT, C>>>(out, ids, table, BT, C);
}
int main() {
    const int B = 4, T = 256;
    int C = 768;
    int V = 50257;
    float *d_out, *d_wte;
    int *d_ids;
    cudaMalloc((void**)&d_wte, (size_t)V * C * sizeof(float));
    cudaMalloc(&d_out, B * T * C * sizeof(float));
    cudaMalloc(&d_ids, B * T * sizeof(int));
    embed_rows_forward(d_out, d_ids, d_wte, B * T, C);
}
"""


def test_an_embeddings_vocabulary_comes_from_the_allocation_of_its_table():
    """``int V = 50257;`` is never passed to the kernel, but the table the launching
    function is called with is allocated as V rows of C floats: the table size is 50257 (it
    was a guessed 1024), and the ids range below it."""
    spec = infer(EMBED)
    assert sizes(spec) == {"BT": "1024", "C": "768", "n_table": "50257"}
    assert buffers(spec, "length", "low", "high") == {
        "out": ("BT * C", None, None), "ids": ("BT", "0", "n_table"),
        "table": ("C * n_table", None, None)}
    assert ("size n_table = 50257: rows of table, indexed by values read from ids; from the "
            "host code ('d_wte' is allocated with 154,389,504 bytes at line 15, rows of 768 "
            "floats)") in spec.notes
    assert ("size BT = 1024: from the host code (the launch at line 7 passes 'BT', which the "
            "call at line 18 passes as 'B * T')") in spec.notes


@pytest.mark.parametrize("change", [
    ("(size_t)V * C * sizeof(float)", "table_bytes(V, C)"),  # the bytes do not evaluate
    ("(size_t)V * C * sizeof(float)", "(V * C + 3) * sizeof(float)"),  # no whole rows of C
    ("    int C = 768;\n", "    int C = 768;\n    C = read_dim();\n"),  # C not from the host
])
def test_an_embedding_table_without_a_readable_allocation_keeps_its_guess(change):
    spec = infer(EMBED.replace(*change))
    assert sizes(spec)["n_table"] == "1024"
    assert ("size n_table = 1024: rows of table, indexed by values read from ids; GUESS, set "
            "it") in spec.notes


def test_a_host_grid_is_not_taken_beside_a_length_the_accesses_do_not_give():
    """With ``ncols`` read from the argument, x's pointer bump is not followed and its length
    is assumed: a grid of nrows blocks over an assumed length of nrows would read row * 32 +
    c past it, so the draft keeps its own grid over its own size."""
    src = softmax().replace("const int ncols = ncols_t == 0 ? ncols_arg : ncols_t;",
                            "const int ncols = ncols_arg;")
    spec = infer(src, "row_softmax", "row_softmax<true, 32, 32>")
    assert spec.launch.grid == ("ceil_div(n, block.x)",)
    assert sizes(spec) == {"n": "1 << 24"}
    assert buffers(spec, "length") == {"x": ("n",), "y": ("n",)}
    assert not any(n.startswith("grid.x = nrows") for n in spec.notes)
    assert ("length of x assumed n: no bounds check found on blockIdx.x, threadIdx.x in 'x[c]'"
            in spec.notes)


def test_a_host_grid_parameter_assigned_before_the_launch_is_not_read():
    src = """__global__ void rows(const float *x, float *out, int ncols) {
    int r = blockIdx.x; float s = 0.0f;
    for (int c = threadIdx.x; c < ncols; c += blockDim.x) s += x[r * ncols + c];
    if (threadIdx.x == 0) out[r] = s;
}
void launch(const float *x, float *out, int ncols, int nrows) {
    nrows = nrows / 2;
    rows<<<nrows, 128>>>(x, out, ncols);
}
int main() { launch(0, 0, 256, 1536); }
"""
    spec = infer(src)
    assert "nrows" not in sizes(spec)
    assert not any(n.startswith("grid.x = nrows") for n in spec.notes)
    assert infer(src.replace("    nrows = nrows / 2;\n", "")).launch.grid == ("nrows",)
