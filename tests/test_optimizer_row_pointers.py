"""``cudalens.optimizer.row_pointers``: row pointers and one-load loop locals folded into
subscripts before the matmul passes match; anything else about the local leaves the text as
written (the passes then give their usual reason)."""

from __future__ import annotations

from cudalens.optimizer import row_pointers
from cudalens.optimizer.passes import regblock_matmul

from optimizer_fixtures import context_with_spec

SPEC = """
kernel mm
size m = 40
size n = 48
size k = 24
scalar m: int = m
scalar n: int = n
scalar k: int = k
in A: float[m * k]
in B: float[k * n]
out C: float[m * n]
block = 16, 16
grid = ceil_div(n, block.x), ceil_div(m, block.y)
"""


def _kernel(pre: str, loop: str, store: str = "C[row * n + col] = acc;") -> str:
    return ("__global__ void mm(const float* A, const float* B, float* C, int m, int n, int k) {\n"
            "    int col = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
            "    if (row < m && col < n) {\n"
            f"{pre}"
            "        float acc = 0.0f;\n"
            "        for (int p = 0; p < k; ++p) {\n"
            f"{loop}"
            "        }\n"
            f"        {store}\n"
            "    }\n"
            "}\n")


def test_row_pointers_fold_into_subscripts_and_keep_line_numbers():
    text = _kernel("        const float* a_row = A + row * k;\n        float* c_row = C + row * n;\n",
                   "            acc += a_row[p] * B[p * n + col];\n", "c_row[col] = acc;")
    ctx = context_with_spec(text, "mm", SPEC)
    folded = row_pointers.inline(ctx)
    lines = folded.text.splitlines()
    assert len(lines) == len(text.splitlines())
    assert lines[4].strip() == "" and lines[5].strip() == ""
    assert lines[8].strip() == "acc += A[row * k + p] * B[p * n + col];"
    assert lines[10].strip() == "C[row * n + col] = acc;"
    assert folded.applied == ctx.applied
    assert regblock_matmul.check(ctx) is None


def test_loop_locals_holding_one_load_are_folded():
    text = _kernel("", "            float a = A[row * k + p];\n            float b = B[p * n + col];\n"
                       "            acc += a * b;\n")
    folded = row_pointers.inline(context_with_spec(text, "mm", SPEC))
    assert "acc += A[row * k + p] * B[p * n + col];" in folded.text
    assert "float a =" not in folded.text


def test_a_dereferenced_row_pointer_is_left_alone():
    text = _kernel("        const float* a_row = A + row * k;\n",
                   "            acc += *(a_row + p) * B[p * n + col];\n")
    ctx = context_with_spec(text, "mm", SPEC)
    assert row_pointers.inline(ctx) is ctx
    reason = regblock_matmul.check(ctx)
    assert reason.startswith("expected exactly the accumulator's declaration") and \
        reason.line == 5


def test_a_local_used_twice_is_not_folded():
    text = _kernel("", "            float a = A[row * k + p];\n            acc += a * a * B[p * n + col];\n")
    ctx = context_with_spec(text, "mm", SPEC)
    assert row_pointers.inline(ctx) is ctx
