"""Polynomials used to turn index expressions into buffer lengths."""

from __future__ import annotations

from cudalens.spec.poly import Poly

rows, cols, n, one = Poly.sym("rows"), Poly.sym("cols"), Poly.sym("n"), Poly.const(1)


def test_arithmetic_and_render():
    # largest index of p[row * cols + col] with row < rows, col < cols, plus one
    assert ((rows - one) * cols + (cols - one) + one).render(["rows", "cols"]) == "rows * cols"
    assert ((n - one) * Poly.sym("s") + one).render(["n", "s"]) == "n * s - s + 1"
    assert (Poly.const(4) * n).render() == "4 * n"
    assert (n - Poly.const(2)).render() == "n - 2"
    assert (-n).render() == "-n"
    assert (n * n).render() == "n * n"
    assert Poly().render() == "0" and Poly.const(0) == Poly()
    assert (cols * rows).render(["rows", "cols"]) == "rows * cols"


def test_properties():
    p = rows * cols + Poly.const(3)
    assert p.symbols == {"rows", "cols"} and p.constant == 3 and not p.is_const()
    assert Poly.const(5).is_const()


def test_dominates():
    assert n.dominates(n - Poly.const(2))
    assert not (n - Poly.const(2)).dominates(n)
    assert not n.dominates(cols) and not cols.dominates(n)


def test_substitute():
    p = rows * cols + one
    assert p.substitute(lambda s: Poly.const(2) if s == "rows" else Poly.sym(s)) == \
        Poly.const(2) * cols + one
    assert p.substitute(lambda s: None) is None
