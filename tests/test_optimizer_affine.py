"""Index expressions as polynomials (``cudalens.optimizer.affine``) and the file's macros
(``cudalens.optimizer.macros``), as the pattern passes read them."""

from __future__ import annotations

import pytest

from cudalens.optimizer.affine import Scope, is_global_index, poly_of, split_linear
from cudalens.optimizer.macros import file_macros, int_value, parse_expression, substitute
from cudalens.kernel_model.syntax import parse
from cudalens.spec.poly import Poly

SOURCE = """
#define IDX(r, c, ld) ((r) * (ld) + (c))
#define N 1024u
#define TWICE(x) (2 * (x))
#define TWICE(x) (x + x)
#define STR(x) #x
#define GX (blockIdx.x * blockDim.x + threadIdx.x)
"""


def _poly(text: str, scope: Scope = None):
    parsed, node = parse_expression(text)
    return poly_of(node, parsed, scope or Scope(macros=file_macros(parse(SOURCE))))


def sym(*names):
    p = Poly.const(1)
    for n in names:
        p = p * Poly.sym(n)
    return p


@pytest.mark.parametrize("text,expected", [
    ("row * cols + col", sym("row", "cols") + sym("col")),
    ("col + (size_t)row * cols", sym("row", "cols") + sym("col")),
    ("static_cast<long long>(row) * cols + col", sym("row", "cols") + sym("col")),
    ("IDX(row, col, cols)", sym("row", "cols") + sym("col")),
    ("IDX(row + 1, col, N)", sym("row") * Poly.const(1024) + Poly.const(1024) + sym("col")),
    ("(i << 2) - -3", sym("i") * Poly.const(4) + Poly.const(3)),
    ("GX", sym("blockIdx.x", "blockDim.x") + sym("threadIdx.x")),
])
def test_polynomials(text, expected):
    assert _poly(text) == expected


@pytest.mark.parametrize("text", ["row / 2", "f(row)", "TWICE(row)", "STR(row)", "1.5 * row",
                                  "row % cols"])
def test_not_polynomials(text):
    assert _poly(text) is None


def test_macros_defined_twice_are_not_expanded_and_ints_are_read():
    macros = file_macros(parse(SOURCE))
    assert "TWICE" not in macros and "IDX" in macros
    assert int_value(macros["N"]) == 1024
    assert int_value(macros["GX"]) is None
    assert substitute(macros["IDX"], ["a + 1", "b", "ld"]) == "(((a + 1)) * ((ld)) + ((b)))"
    with pytest.raises(ValueError, match="macro IDX takes 3 arguments, found 2"):
        substitute(macros["IDX"], ["a", "b"])
    with pytest.raises(ValueError, match=r"cannot parse 'a \+' as an expression"):
        parse_expression("a +")


def test_locals_and_global_index():
    parsed, node = parse_expression("src + 1")
    p2, init = parse_expression("y * cols + x")
    assert poly_of(node, parsed, Scope(locals={"src": (p2, init)})) == \
        sym("y", "cols") + sym("x") + Poly.const(1)
    assert is_global_index(_poly("threadIdx.y + blockDim.y * blockIdx.y"), "y")
    assert not is_global_index(_poly("threadIdx.y + blockDim.x * blockIdx.y"), "y")
    coef, rest = split_linear(sym("row", "cols") + sym("col"), "row")
    assert (coef, rest) == (sym("cols"), sym("col"))
    with pytest.raises(ValueError, match="row appears squared"):
        split_linear(sym("row", "row"), "row")
