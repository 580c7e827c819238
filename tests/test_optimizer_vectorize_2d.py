"""Pass ``vectorize_2d``: float4 loads and stores in a 2D elementwise kernel.

The rewrite computes each element with the original statements, so on the CPU block
simulator its outputs are the original's, at sizes where the 16-byte path is taken (cols a
multiple of 4) and where rows are misaligned or the last columns ragged (the scalar path).
Negative cases assert the reason and its line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalens.optimizer.context import PassNotApplicable, make_context
from cudalens.optimizer.passes import vectorize_2d
from cudalens.optimizer.reasons import line_of
from cudalens.target import load_target

import block_sim
from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

SPEC = """
kernel k
size rows = 20
size cols = 24
scalar rows: int = rows
scalar cols: int = cols
in x: {t}[rows * cols]
in b: float[cols]
out y: {t}[rows * cols]
block = 16, 16
grid = ceil_div(cols, block.x), ceil_div(rows, block.y)
"""


def _k(body: str, t: str = "float") -> str:
    return (f"__global__ void k(const {t}* x, const float* b, {t}* y, int rows, int cols) {{\n"
            f"    int col = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"    int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
            f"    if (row < rows && col < cols) {{\n{body}\n    }}\n}}\n")


def _example():
    target = load_target(EXAMPLES / "relu_bias.cu")
    return make_context(target.text, str(target.path), target.kernel.name, target.spec)


def test_relu_bias_rewrite_launch_and_structure():
    ctx = _example()
    assert vectorize_2d.check(ctx) is None
    result = vectorize_2d.apply(ctx)
    src = result.source
    assert (result.launch.block, result.launch.grid) == \
        (("64", "4"), ("ceil_div(cols, 4 * block.x)", "ceil_div(rows, block.y)"))
    assert result.tags == ("vec4-2d", "block=64x4")
    assert "const int col4 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;" in src
    assert "if (row < rows && col4 + 3 < cols) {" in src
    assert "reinterpret_cast<size_t>(&bias[col]) % 16 == 0 &&" in src
    assert ("*reinterpret_cast<float4*>(bias_v) = "
            "*reinterpret_cast<const float4*>(&bias[col]);") in src
    assert "float v = x_v[k] + bias_v[k];" in src and "y_v[k] = v > 0.0f ? v : 0.0f;" in src
    assert ("*reinterpret_cast<float4*>(&y[row * cols + col]) = "
            "*reinterpret_cast<const float4*>(y_v);") in src
    assert "x, bias, y" in result.explanation


@block_sim.needs_gxx
@pytest.mark.parametrize("sizes", [{"rows": 9, "cols": 16}, {"rows": 7, "cols": 33},
                                   {"rows": 5, "cols": 6}], ids=["aligned", "ragged", "narrow"])
def test_rewrite_computes_the_originals_outputs_on_cpu(sizes):
    ctx = _example()
    result = vectorize_2d.apply(ctx)
    before = block_sim.run(ctx.text, "relu_bias", ctx.spec, sizes)
    after = block_sim.run(result.source, "relu_bias", ctx.spec, sizes, result.launch)
    assert after.buffers == before.buffers
    assert 77 not in before.buffers["y"][:sizes["rows"] * sizes["cols"]]


@needs_nvcc
def test_relu_bias_rewrite_compiles_to_vector_accesses():
    r = compile_source(vectorize_2d.apply(_example()).source, ptx=True)
    assert r.ok, r.stderr
    assert r.ptx.count("v4.f32") >= 3 and ".local" not in r.ptx


@pytest.mark.parametrize("body,t,reason,line", [
    ("        y[row] = x[row * cols + col];", "float",
     "'y[row]' (line 5) writes the same element for every col", 5),
    ("        y[col * rows + row] = x[row * cols + col];", "float",
     "'y[col * rows + row]' (line 5) is not at a fixed offset from col: not a 2D elementwise "
     "access", 5),
    ("        for (int j = 0; j < 2; ++j) y[row * cols + col] = x[row * cols + col];", "float",
     "the body has a loop (line 5): not one element per thread", 5),
    ("        y[row * cols + col] = x[row * cols + col] + x[row * cols + col + 1];", "float",
     "x is accessed at two offsets ('x[row * cols + col + 1]' (line 5) and 'row * cols + "
     "col'): one vector per buffer", 5),
])
def test_rejects_with_the_reason_and_line(body, t, reason, line):
    ctx = context_with_spec(_k(body, t), "k", SPEC.format(t="float"))
    got = vectorize_2d.check(ctx)
    assert got == reason and line_of(got) == line
    with pytest.raises(PassNotApplicable, match="vectorize_2d on k: "):
        vectorize_2d.apply(ctx)


def test_double_buffers_are_refused():
    ctx = context_with_spec(_k("        y[row * cols + col] = x[row * cols + col] + b[col];",
                               "double"), "k", SPEC.format(t="float64"))
    assert vectorize_2d.check(ctx) == "x holds double; the pass moves float buffers as float4"
