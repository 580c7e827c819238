"""Drafts whose values are in the host code that launches the kernel (issue 13 item 5, the
new-user report's item 24, R5): dynamic shared memory from a host local built with a
function-like macro and sizeof, the value a ``switch`` case fixes at a launch, a template
instance's own launch, and the guess when the shared size does not translate. Kernels written
here in the shapes ggml's soft_max launch takes."""

from __future__ import annotations

import pytest

from cudalens.spec.expr import evaluate
from cudalens.spec.host_locals import case_bindings
from cudalens.spec.infer import _fold_bits
from spec_fields import infer, line_of, scalars

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
