"""Loops whose variable is declared before them (``int c; ... for (c = 0; c < n; c++)``):
the shared header reader takes them as the loop's own variable when nothing else uses it
(R4 of the first-use report), and the row, matmul and unroll passes then match."""

from __future__ import annotations

import pytest

from cudalens.kernel_model.loops import for_header
from cudalens.kernel_model.syntax import parse, walk
from cudalens.optimizer.plan import make_plan
from cudalens.optimizer.staged_search import ordered

from nvcc_util import compile_source, needs_nvcc
from variant_corpus import context, variants

DECLARED = {"warp_per_row/gemv_declared_index.cu", "block_per_row/rowsum_declared_index.cu",
            "tiled_matmul/declared_counter.cu"}
FILES = [v for v in variants() if v.id in DECLARED]

ROWSUM = """
__global__ void rowsum(int rows, int cols, const float *M, float *out) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    float acc = 0.0f;
    int c;
    %s
    for (c = 0; c < cols; c++) acc += M[r * cols + c];
    out[r] = acc;%s
  }
}
"""


def _loop_header(text):
    parsed = parse(text)
    loop = next(n for n in walk(parsed.tree.root_node) if n.type == "for_statement")
    return for_header(loop, parsed), parsed


def test_the_header_takes_a_variable_declared_before_the_loop():
    head, parsed = _loop_header(ROWSUM % ("", ""))
    assert (head.var, parsed.text_of(head.start), head.ctype) == ("c", "0", "int")
    assert parsed.text_of(head.declared) == "int c;"
    assert parsed.line_of(head.declared) == 6


@pytest.mark.parametrize("between,after", [
    ("c = 3;", ""),                 # used between the declaration and the loop
    ("", "\n    out[r] += c;"),     # its final value read after the loop
])
def test_the_header_refuses_a_variable_used_outside_the_loop(between, after):
    head, _ = _loop_header(ROWSUM % (between, after))
    assert head is None


def test_an_initialized_declaration_is_not_the_loops_own():
    head, _ = _loop_header(ROWSUM.replace("int c;", "int c = 2;") % ("", ""))
    assert head is None


def test_the_enclosing_block_counts_and_an_else_branch_that_uses_it_refuses():
    text = ROWSUM.replace("    int c;\n", "").replace("if (r < rows) {", "int c;\n  if (r < rows) {")
    head, parsed = _loop_header(text % ("", ""))
    assert parsed.text_of(head.declared) == "int c;"
    used = text.replace("out[r] = acc;%s\n  }", "out[r] = acc;%s\n  } else { out[0] = c; }")
    assert _loop_header(used % ("", ""))[0] is None


@pytest.mark.parametrize("v", FILES, ids=[v.id for v in FILES])
def test_plan_proposes_the_pass_for_the_declared_spelling(v):
    plan = make_plan(context(v))
    assert any(v.pass_name in c.passes and c.first_batch for c in plan.candidates), \
        [n.reason for n in plan.not_applied if n.pass_name == v.pass_name]


@needs_nvcc
@pytest.mark.parametrize("v", FILES, ids=[v.id for v in FILES])
def test_the_rewrites_of_the_declared_spelling_compile(v):
    sources = {c.source for c in ordered(context(v), 0) if v.pass_name in c.passes}
    assert sources
    failed = [r.stderr[:600] for r in map(compile_source, sources) if not r.ok]
    assert not failed, failed
