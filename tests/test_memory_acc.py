"""Accumulations into the output element in memory (``cudalens.optimizer.memory_acc``): the
register forms, the passes' outputs against the original's under ``block_sim`` (bit for bit
where the pass keeps the order), and the refusals with their lines."""

from __future__ import annotations

import math

import pytest

from cudalens.optimizer import memory_acc
from cudalens.optimizer.passes import get
from cudalens.optimizer.reasons import line_of

import block_sim
from optimizer_fixtures import context_with_spec

GEMM = """#define NI 37
#define NJ 45
#define NK 29
__global__ void g(float alpha, float beta, const float *a, const float *b, float *c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int k;
    if ((i < NI) && (j < NJ)) {
        c[i * NJ + j] *= beta;
        for (k = 0; k < NK; k++)
            c[i * NJ + j] += alpha * a[i * NK + k] * b[k * NJ + j];
    }
}
"""
GEMM_SPEC = """
kernel g
size NI = 37
size NJ = 45
size NK = 29
scalar alpha: float = 1.5
scalar beta: float = 0.75
in a: float[NI * NK]
in b: float[NK * NJ]
inout c: float[NI * NJ]
block = 32, 8
grid = ceil_div(NJ, block.x), ceil_div(NI, block.y)
"""

GEMM_RUNTIME = """__global__ void g(const float* A, const float* B, float* C, float beta, int m, int n,
                  int k)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        C[row * n + col] = C[row * n + col] * beta;
        for (int p = 0; p < k; ++p) {
            C[row * n + col] += A[row * k + p] * B[p * n + col];
        }
        C[row * n + col] /= 3.0f;
    }
}
"""
GEMM_RUNTIME_SPEC = """
kernel g
size m = 64
size n = 64
size k = 64
scalar beta: float = 0.5
scalar m: int = m
scalar n: int = n
scalar k: int = k
in A: float[m * k]
in B: float[k * n]
inout C: float[m * n]
block = 16, 16
grid = ceil_div(n, block.x), ceil_div(m, block.y)
"""

ROWS = """__global__ void k(const float* A, const float* x, float* y, int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows) {
        y[i] = 0;
        for (int j = 0; j < cols; j++)
            y[i] += A[i * cols + j] * x[j];
        y[i] /= cols;
    }
}
"""
ROWS_SPEC = """
kernel k
size rows = 64
size cols = 2048
scalar rows: int = rows
scalar cols: int = cols
in A: float[rows * cols]
in x: float[cols]
out y: float[rows]
block = 128
grid = ceil_div(rows, block.x)
"""

COLUMNS = """__global__ void k(const float* data, float* mean, float float_n, int m, int n)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i;
    if (j < m) {
        mean[j] = 0.0;
        for (i = 0; i < n; i++)
            mean[j] += data[i * m + j];
        mean[j] /= float_n;
    }
}
"""
COLUMNS_SPEC = """
kernel k
size m = 64
size n = 48
scalar float_n: float = n
scalar m: int = m
scalar n: int = n
in data: float[n * m]
out mean: float[m]
block = 128
grid = ceil_div(m, block.x)
"""


def test_ordered_form_keeps_the_operations_and_the_lines():
    ctx = context_with_spec(GEMM_RUNTIME, "g", GEMM_RUNTIME_SPEC)
    new, why = memory_acc.local(ctx, ordered=True)
    assert why is None
    lines = new.text.split("\n")
    assert len(lines) == len(GEMM_RUNTIME.split("\n"))
    assert lines[6].strip() == "float C_acc = C[row * n + col] * beta;"
    assert lines[8].strip() == "C_acc += A[row * k + p] * B[p * n + col];"
    assert lines[10].strip() == "C_acc /= 3.0f; C[row * n + col] = C_acc;"
    # the candidate's layout, settled after the passes: the store on a line of its own
    assert memory_acc.own_lines(new, ctx.text).split("\n")[5:12] == [
        "    if (row < m && col < n) {",
        "        float C_acc = C[row * n + col] * beta;",
        "        for (int p = 0; p < k; ++p) {",
        "            C_acc += A[row * k + p] * B[p * n + col];",
        "        }",
        "        C_acc /= 3.0f;",
        "        C[row * n + col] = C_acc;"]


def test_reassociated_form_stores_once_and_keeps_the_later_statements_on_memory():
    ctx = context_with_spec(ROWS, "k", ROWS_SPEC)
    new, why = memory_acc.local(ctx, ordered=False)
    assert why is None
    lines = new.text.split("\n")
    assert lines[4].strip() == "float y_acc = 0.0f;"
    assert lines[6].strip() == "y_acc += A[i * cols + j] * x[j]; y[i] = y_acc;"
    assert lines[7].strip() == "y[i] /= cols;"
    assert memory_acc.own_lines(new, ctx.text).split("\n")[3:10] == [
        "    if (i < rows) {",
        "        float y_acc = 0.0f;",
        "        for (int j = 0; j < cols; j++)",
        "            y_acc += A[i * cols + j] * x[j];",
        "        y[i] = y_acc;",
        "        y[i] /= cols;",
        "    }"]


ROWS_NO_INIT = ROWS.replace("        y[i] = 0;\n", "")


def test_a_register_added_before_the_loop_is_declared_on_a_line_of_its_own():
    """No initial statement: the declaration goes in front of the loop, on its line (lines
    kept), and ``own_lines`` moves the loop and the store to lines of their own, at the
    loop's indentation."""
    ctx = context_with_spec(ROWS_NO_INIT, "k", ROWS_SPEC)
    new, why = memory_acc.local(ctx, ordered=False)
    assert why is None
    lines = new.text.split("\n")
    assert len(lines) == len(ROWS_NO_INIT.split("\n"))
    assert lines[4] == "        float y_acc = 0.0f; for (int j = 0; j < cols; j++)"
    assert lines[5] == "            y_acc += A[i * cols + j] * x[j]; y[i] += y_acc;"
    assert memory_acc.own_lines(new, ctx.text).split("\n")[3:10] == [
        "    if (i < rows) {",
        "        float y_acc = 0.0f;",
        "        for (int j = 0; j < cols; j++)",
        "            y_acc += A[i * cols + j] * x[j];",
        "        y[i] += y_acc;",
        "        y[i] /= cols;",
        "    }"]
    assert memory_acc.own_lines(ctx, ctx.text) is ctx.text  # no register: the text itself


OWN_ACC = """__global__ void k(const float* A, const float* x, float* y, float* z, int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows) {
        float y_acc = 0.0f; for (int j = 0; j < cols; j++) y_acc += x[j]; z[i] = y_acc;
        y[i] = 0; for (int j = 0; j < cols; j++) y[i] += A[i * cols + j] * x[j];
    }
}
"""
OWN_ACC_SPEC = ROWS_SPEC.replace("out y: float[rows]", "out y: float[rows]\nout z: float[rows]")


def test_the_users_own_statements_keep_their_lines():
    """A ``y_acc`` the user wrote is the user's layout, left as it is; the register
    memory_acc adds (named ``y_acc1``, fresh) is laid out."""
    ctx = context_with_spec(OWN_ACC, "k", OWN_ACC_SPEC)
    new, why = memory_acc.local(ctx, ordered=False)
    assert why is None
    assert new.text.split("\n")[5] == ("        float y_acc1 = 0.0f; for (int j = 0; j < cols; "
                                       "j++) y_acc1 += A[i * cols + j] * x[j]; y[i] = y_acc1;")
    assert memory_acc.own_lines(new, ctx.text).split("\n")[4:10] == [
        "        float y_acc = 0.0f; for (int j = 0; j < cols; j++) y_acc += x[j]; z[i] = y_acc;",
        "        float y_acc1 = 0.0f;",
        "        for (int j = 0; j < cols; j++) y_acc1 += A[i * cols + j] * x[j];",
        "        y[i] = y_acc1;",
        "    }",
        "}"]


def _laid_out(ctx, result):
    """The pass's text as its candidate has it (``memory_acc.own_lines``)."""
    return memory_acc.own_lines(ctx.rewritten(result.source, result.launch, "pass"), ctx.text)


def _outputs(ctx, result, sizes, name):
    """``name`` after the original and after the pass's laid-out text (the one the user
    gets), under ``block_sim`` at ``sizes``."""
    kernel = ctx.kernel.qualified_name
    before = block_sim.run(ctx.text, kernel, ctx.spec, sizes).buffers[name]
    after = block_sim.run(_laid_out(ctx, result), kernel, ctx.spec, sizes,
                          result.launch).buffers[name]
    return before, after


@block_sim.needs_gxx
@pytest.mark.parametrize("pass_name", ["tiled_matmul", "regblock_matmul"])
def test_matmul_passes_give_the_originals_bits(pass_name):
    """The k order is kept: the same float operations, so the same bits (the macros' sizes
    37 x 45 x 29 and 19 x 23 x 17 are no multiples of the tiles)."""
    for text, spec, sizes in ((GEMM, GEMM_SPEC, {"NI": 37, "NJ": 45, "NK": 29}),
                              (GEMM_RUNTIME, GEMM_RUNTIME_SPEC, {"m": 19, "n": 23, "k": 17})):
        ctx = context_with_spec(text, "g", spec)
        assert get(pass_name).check(ctx) is None
        name = "c" if "NI" in sizes else "C"
        before, after = _outputs(ctx, get(pass_name).apply(ctx), sizes, name)
        assert after == before
        assert 77 not in before[:len(before) - block_sim.GUARD]  # every element was written


def _close(a, b):
    return len(a) == len(b) and all(math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-5)
                                    for x, y in zip(a, b))


@block_sim.needs_gxx
@pytest.mark.parametrize("pass_name", ["warp_per_row", "block_per_row"])
def test_row_passes_compute_the_originals_outputs_at_a_ragged_size(pass_name):
    ctx = context_with_spec(ROWS, "k", ROWS_SPEC)
    assert get(pass_name).check(ctx) is None
    result = get(pass_name).apply(ctx)
    before, after = _outputs(ctx, result, {"rows": 37, "cols": 45}, "y")
    assert _close(before, after)
    assert before[0] != 0.0
    # the store the pass guarded follows the reduction on a line of its own
    kept, laid = {"warp_per_row": ("        } if (lane == 0) y[i] = y_acc;\n",
                                   "        }\n        if (lane == 0) y[i] = y_acc;\n"),
                  "block_per_row": (
                      "        __syncthreads();  /* the slots are free again */ if (threadIdx.x == 0)"
                      " y[i] = y_acc;\n",
                      "        __syncthreads();  /* the slots are free again */\n"
                      "        if (threadIdx.x == 0) y[i] = y_acc;\n")}[pass_name]
    assert kept in result.source
    assert laid in _laid_out(ctx, result)
    assert _laid_out(ctx, result).replace(laid, kept) == result.source


@block_sim.needs_gxx
def test_column_reduce_computes_the_originals_means_at_a_ragged_size():
    ctx = context_with_spec(COLUMNS, "k", COLUMNS_SPEC)
    assert get("column_reduce").check(ctx) is None
    before, after = _outputs(ctx, get("column_reduce").apply(ctx), {"m": 37, "n": 45}, "mean")
    assert _close(before, after)
    assert before[0] != 0.0


REFUSALS = [
    # the loop reads the buffer it accumulates into
    (ROWS.replace("* x[j];", "* y[j];"), ROWS_SPEC, "warp_per_row",
     "'y[i] += A[i * cols + j] * y[j]' (line 7) accumulates into y, which the loop also uses "
     "at line 7: kept in a register the sum would differ from the original's reads of y", 7),
    # a column sum that also reads its running value
    (COLUMNS.replace("mean[j] += data[i * m + j];", "mean[j] += data[i * m + j] - mean[j];"),
     COLUMNS_SPEC, "column_reduce",
     "'mean[j] += data[i * m + j] - mean[j]' (line 8) accumulates into mean, which the loop "
     "also uses at line 8: kept in a register the sum would differ from the original's reads "
     "of mean", 8),
    # the initial value uses what the loop changes
    (GEMM_RUNTIME.replace("{\n            C[row * n + col] +=", "{\n            beta = beta * 2.0f; "
                          "C[row * n + col] +="),
     GEMM_RUNTIME_SPEC, "tiled_matmul",
     "the initial value of C (line 7) uses beta, which the loop at line 8 changes", 7),
]


@pytest.mark.parametrize("text,spec,pass_name,reason,line", REFUSALS)
def test_refusals_say_why_and_where(text, spec, pass_name, reason, line):
    kernel = "g" if "__global__ void g" in text else "k"
    got = get(pass_name).check(context_with_spec(text, kernel, spec))
    assert got == reason and line_of(got) == line


AFTER_THE_SUM = ROWS_NO_INIT.replace("        y[i] /= cols;\n",
                                    "        y[i] /= cols;\n        if (y[i] > 0) y[i] = 1;\n")


@pytest.mark.parametrize("pass_name", ["warp_per_row", "block_per_row"])
def test_a_refusal_after_the_register_form_cites_the_originals_line(pass_name):
    """memory_acc applies (its declaration and store on the loop's lines), then the row pass
    refuses a statement below the loop: the line it names is the one in the user's file."""
    ctx = context_with_spec(AFTER_THE_SUM, "k", ROWS_SPEC)
    new, why = memory_acc.local(ctx, ordered=False)
    assert why is None and "y_acc += " in new.text
    line = AFTER_THE_SUM.split("\n").index("        if (y[i] > 0) y[i] = 1;") + 1
    assert line == 8
    got = get(pass_name).check(ctx)
    assert got == ("'if (y[i] > 0) y[i] = 1;' at line 8: expected declarations, assignments "
                   "and column loops only")
    assert line_of(got) == line


def test_an_aliased_launch_is_refused():
    """The register form differs from the original where another pointer overlaps the
    output: a launch site passing c as an input too is refused (``aliasing``)."""
    host = GEMM + ("void run(float* a, float* c, dim3 g3, dim3 b3) {\n"
                   "    g<<<g3, b3>>>(1.0f, 0.5f, c, a, c);\n}\n")
    got = get("tiled_matmul").check(context_with_spec(host, "g", GEMM_SPEC))
    assert got == "the launch at line 16 passes 'c' as both a and c: the pointers alias"
