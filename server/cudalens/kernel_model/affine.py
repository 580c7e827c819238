"""Index expressions as integer polynomials (``cudalens.spec.poly.Poly``), for pattern passes.

``row * cols + col``, ``col + (size_t)row * cols``, ``IDX(row, col, cols)`` with ``#define
IDX(r, c, ld) ((r) * (ld) + (c))`` and ``static_cast<long long>(row) * cols + col`` all become
the same polynomial ``cols*row + col``, so a pass compares shapes, not spellings. Symbols
are identifiers and builtin fields (``blockIdx.x``); local variables named in ``locals`` are
replaced by their initializers. Casts are looked through: a pass that reuses the original
expression text (as the structural passes do) keeps the original's integer widths and
overflow behaviour, so the polynomial only has to say *which* element is addressed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

import tree_sitter

from cudalens.kernel_model.syntax import Parsed, named_children
from cudalens.kernel_model.macros import Macro, parse_expression, substitute
from cudalens.spec.poly import Poly

_MAX_DEPTH = 12  # nested macro expansions / local substitutions followed


@dataclass(frozen=True)
class Scope:
    """What names mean while converting: file ``macros`` and ``locals`` (name -> the
    parse holding its initializer and the initializer node)."""

    macros: Mapping[str, Macro] = field(default_factory=dict)
    locals: Mapping[str, tuple[Parsed, tree_sitter.Node]] = field(default_factory=dict)


def strip_casts(node: tree_sitter.Node, parsed: Parsed) -> tree_sitter.Node:
    """``node`` without enclosing parentheses, C casts and ``static_cast<T>(...)``."""
    while True:
        if node.type in ("parenthesized_expression", "condition_clause"):
            inner = named_children(node)
            if len(inner) != 1:
                return node
            node = inner[0]
            continue
        if node.type == "cast_expression":
            node = node.child_by_field_name("value")
            continue
        if node.type == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            if fn is not None and fn.type == "template_function" and args is not None and \
                    parsed.text_of(fn).replace(" ", "").startswith("static_cast<") and \
                    len(named_children(args)) == 1:
                node = named_children(args)[0]
                continue
        return node


def builtin_field(node: tree_sitter.Node, parsed: Parsed) -> Optional[str]:
    """``"blockIdx.x"`` for a field expression on an identifier, else None."""
    node = strip_casts(node, parsed)
    if node.type != "field_expression":
        return None
    base, fld = node.child_by_field_name("argument"), node.child_by_field_name("field")
    if base is None or fld is None or base.type != "identifier":
        return None
    op = next((c for c in node.children if not c.is_named), None)
    if op is None or op.type != ".":
        return None
    return f"{parsed.text_of(base)}.{parsed.text_of(fld)}"


def poly_of(node: Optional[tree_sitter.Node], parsed: Parsed, scope: Scope = Scope(),
            depth: int = 0) -> Optional[Poly]:
    """The polynomial ``node`` computes, or None where it is not a polynomial of integer
    symbols (division, a function call, a float literal, a macro that cannot be expanded)."""
    if node is None or depth > _MAX_DEPTH:
        return None
    node = strip_casts(node, parsed)
    t = node.type
    if t == "number_literal":
        text = parsed.text_of(node).rstrip("uUlL")
        try:
            return Poly.const(int(text, 0))
        except ValueError:
            return None
    if t == "identifier":
        name = parsed.text_of(node)
        if name in scope.locals:
            p2, init = scope.locals[name]
            return poly_of(init, p2, scope, depth + 1)
        macro = scope.macros.get(name)
        if macro is not None and macro.params is None:
            return _expand(macro.body, scope, depth)
        return Poly.sym(name)
    if t == "field_expression":
        name = builtin_field(node, parsed)
        return Poly.sym(name) if name else None
    if t == "unary_expression":
        op = node.child_by_field_name("operator")
        arg = poly_of(node.child_by_field_name("argument"), parsed, scope, depth)
        if arg is None or op is None:
            return None
        return -arg if op.type == "-" else arg if op.type == "+" else None
    if t == "binary_expression":
        op = node.child_by_field_name("operator").type
        left = poly_of(node.child_by_field_name("left"), parsed, scope, depth)
        right = poly_of(node.child_by_field_name("right"), parsed, scope, depth)
        if left is None or right is None:
            return None
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if op == "<<" and right.is_const() and 0 <= right.constant < 63:
            return left * Poly.const(1 << right.constant)
        if op in ("/", "%") and left.is_const() and right.is_const() and right.constant:
            a, b = left.constant, right.constant  # C's integer division truncates
            q = abs(a) // abs(b) * (1 if (a >= 0) == (b > 0) else -1)
            return Poly.const(q if op == "/" else a - q * b)
        return None
    if t == "call_expression":
        fn = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if fn is None or args is None or fn.type != "identifier":
            return None
        macro = scope.macros.get(parsed.text_of(fn))
        if macro is None or macro.params is None or not macro.expandable:
            return None
        try:
            text = substitute(macro, [parsed.text_of(a) for a in named_children(args)])
        except ValueError:
            return None
        return _expand(text, scope, depth)
    return None


def _expand(text: str, scope: Scope, depth: int) -> Optional[Poly]:
    try:
        p2, expr = parse_expression(text)
    except ValueError:
        return None
    # Locals of the kernel are not visible inside the re-parsed text by node identity, but by
    # name they are: the scope carries them.
    return poly_of(expr, p2, scope, depth + 1)


def split_linear(p: Poly, var: str) -> tuple[Poly, Poly]:
    """(coefficient, rest) with ``p == coefficient * var + rest`` and ``var`` in neither, or
    raises ValueError when ``var`` appears with a power above one."""
    coef: dict = {}
    rest: dict = {}
    for m, c in p.terms:
        k = m.count(var)
        if k == 0:
            rest[m] = c
        elif k == 1:
            mm = list(m)
            mm.remove(var)
            coef[tuple(mm)] = c
        else:
            raise ValueError(f"{var} appears squared")
    return Poly._of(coef), Poly._of(rest)


def is_global_index(p: Optional[Poly], axis: str) -> bool:
    """``p`` is ``blockIdx.A * blockDim.A + threadIdx.A`` for ``axis`` A."""
    if p is None:
        return False
    want = Poly.sym(f"blockIdx.{axis}") * Poly.sym(f"blockDim.{axis}") + \
        Poly.sym(f"threadIdx.{axis}")
    return p == want
