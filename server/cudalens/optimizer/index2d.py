"""Recognizing the one-thread-per-element 2D kernel that the tiled rewrites start from.

The pattern (either index first, any integer type, ``const`` or not, casts and parentheses
allowed, index macros expanded)::

    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {          // or: if (row >= rows || col >= cols) return;
        ...statements...
    }

where each bound is an integer expression of scalar parameters, integer macros and
literals. ``match`` returns the two axes, the guard and the guarded statements; the passes
built on it (``tiled_transpose``, ``tiled_matmul``) check what the statements do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.kernel_model.model import readable_body_or
from cudalens.kernel_model.syntax import Parsed, named_children, unparen, walk
from cudalens.optimizer.affine import Scope, is_global_index, poly_of, strip_casts
from cudalens.optimizer.context import PassContext
from cudalens.kernel_model.macros import expand_use, why_no_value
from cudalens.optimizer.macros import Macro, file_macros, int_value
from cudalens.optimizer.reasons import LocatedError
from cudalens.spec import dtypes
from cudalens.spec.model import ScalarDecl
from cudalens.spec.poly import Poly

_BOUND_OPERATORS = ("+", "-", "*", "/", "%", "<<", ">>")


class NoMatch(LocatedError):
    """The kernel does not fit the pattern; the message says why, with the line."""


@dataclass(frozen=True)
class Axis:
    """One index variable: ``var`` (C name) of C type ``ctype`` on thread axis ``axis``
    (``"x"``/``"y"``), in range while ``var < bound`` (C text); ``bound_spec`` is the bound as
    a spec expression of the sizes, ``bound_poly`` as a polynomial of the kernel's names."""

    var: str
    ctype: str
    axis: str
    bound: str
    bound_spec: str
    bound_poly: Poly


@dataclass(frozen=True)
class Grid2D:
    """A matched 2D kernel.

    ``guard``: C text of a condition true exactly for in-range indices (the original's
    condition, or ``!(...)`` of its early-return condition); ``statements``: the guarded
    statements, in order; ``first_statement_line``: for messages. ``macros`` are the file's.
    """

    x: Axis
    y: Axis
    guard: str
    statements: tuple[tree_sitter.Node, ...]
    parsed: Parsed
    body: tree_sitter.Node
    macros: dict[str, Macro]
    fixed: tuple[str, ...] = ()  # C declarations a rewrite emits after the two indices

    def axis_of(self, var: str) -> Optional[Axis]:
        return self.x if var == self.x.var else self.y if var == self.y.var else None


def _fail(msg: str, line: Optional[int] = None) -> NoMatch:
    return NoMatch(msg, line)


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 60 else line[:57] + "..."


def spec_text(node: tree_sitter.Node, parsed: Parsed, ctx: PassContext,
              macros: dict[str, Macro], depth: int = 0,
              use: Optional[tuple[str, int]] = None) -> str:
    """A bound as a spec expression: scalar parameters replaced by their spec values, integer
    macros by their values, other macros expanded (``#define BOUND PICK(N, m)`` with
    ``#define PICK(x, y) y`` is ``m``'s value; at most 8 expansions deep); ``use``: (text,
    line) of the macro use in the kernel's file that ``node`` is the expansion of.

    Raises:
        NoMatch: the bound uses anything else (a local variable, a call, a float); for a
            macro's expansion the message names the use and its line, and for a name that
            looks like a macro why it has no value (``macros.why_no_value``).
    """
    node = unparen(node)
    text = parsed.text_of(node)
    expanded = expand_use(node, parsed, macros) if depth < 8 else None
    if expanded is not None:
        use = use or (text, parsed.line_of(node))
        return spec_text(expanded[1], expanded[0], ctx, macros, depth + 1, use)
    if node.type == "identifier":
        if text in macros and int_value(macros[text]) is not None:
            return str(int_value(macros[text]))
        try:
            decl = ctx.spec.param(text)
        except KeyError:
            decl = None
        if not isinstance(decl, ScalarDecl):
            line = use[1] if use is not None else parsed.line_of(node)
            shown = f"'{text}' (line {line})" if use is None or use[0] == text else \
                f"'{use[0]}' (line {line}) expands to '{text}', which"
            why = why_no_value(text, ctx.text) if text not in macros else None
            raise _fail(f"the bound {shown} is not a scalar parameter or an integer macro"
                        + (f": {why}" if why else ""), line=line)
        spec_type = dtypes.spec_type_for_c(decl.type) or decl.type
        if spec_type not in dtypes.SPEC_TYPES or dtypes.is_float(spec_type):
            raise _fail(f"the bound '{text}' has type {decl.type}, expected an integer")
        expr = decl.expr.strip()
        return expr if expr.replace("_", "a").isalnum() else f"({expr})"
    if node.type == "number_literal":
        try:
            return str(int(text.rstrip("uUlL"), 0))
        except ValueError:
            pass
    if node.type == "binary_expression":
        op = node.child_by_field_name("operator").type
        if op in _BOUND_OPERATORS:
            left = spec_text(node.child_by_field_name("left"), parsed, ctx, macros, depth, use)
            right = spec_text(node.child_by_field_name("right"), parsed, ctx, macros, depth, use)
            return f"({left} {op} {right})"
    line = use[1] if use is not None else parsed.line_of(node)
    shown = f"'{text}' (line {line})" if use is None else \
        f"'{use[0]}' (line {line}) expands to '{text}', which"
    raise _fail(f"the bound {shown} is not an integer expression of scalar parameters",
                line=line)


def _index_declarations(stmts: list[tree_sitter.Node], parsed: Parsed,
                        scope: Scope) -> tuple[dict[str, tuple[str, str]], int]:
    """{var: (axis, ctype)} of the global-index declarations at the start; and how many
    statements they take."""
    found: dict[str, tuple[str, str]] = {}
    used = 0
    for stmt in stmts:
        if stmt.type != "declaration" or len(found) == 2:
            break
        type_node = stmt.child_by_field_name("type")
        ctype = " ".join(parsed.text_of(type_node).split()) if type_node is not None else ""
        decls = stmt.children_by_field_name("declarator")
        got = []
        for d in decls:
            if d.type != "init_declarator":
                break
            name = d.child_by_field_name("declarator")
            value = d.child_by_field_name("value")
            if name is None or name.type != "identifier":
                break
            p = poly_of(value, parsed, scope)
            axis = next((a for a in ("x", "y") if is_global_index(p, a)), None)
            if axis is None:
                break
            got.append((parsed.text_of(name), axis))
        if len(got) != len(decls):
            break
        if ctype == "auto":
            ctype = "unsigned int"  # blockIdx.x * blockDim.x + threadIdx.x is unsigned
        if not dtypes.is_int_c_type(ctype):
            raise _fail(f"the index {got[0][0]} at line {parsed.line_of(stmt)} has type "
                        f"'{ctype}', expected an integer type", line=parsed.line_of(stmt))
        for name, axis in got:
            found[name] = (axis, ctype)
        used += 1
    return found, used


def _comparison(node: tree_sitter.Node, parsed: Parsed, names: set[str], exit_: bool):
    """(var, bound node) for ``var < bound`` (``var >= bound`` when ``exit_``), either side."""
    node = unparen(node)
    if node.type != "binary_expression":
        return None
    op = node.child_by_field_name("operator").type
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    is_var = lambda n: strip_casts(n, parsed).type == "identifier" and \
        parsed.text_of(strip_casts(n, parsed)) in names
    lt, gt = (">=", "<=") if exit_ else ("<", ">")
    if op == lt and is_var(left):
        return parsed.text_of(strip_casts(left, parsed)), right
    if op == gt and is_var(right):
        return parsed.text_of(strip_casts(right, parsed)), left
    return None


def _conjuncts(node: tree_sitter.Node, op: str) -> list[tree_sitter.Node]:
    node = unparen(node)
    if node.type == "binary_expression" and node.child_by_field_name("operator").type == op:
        return _conjuncts(node.child_by_field_name("left"), op) + \
            _conjuncts(node.child_by_field_name("right"), op)
    return [node]


def counter_only(decl: tree_sitter.Node, rest: list, parsed: Parsed) -> bool:
    """``decl`` declares loop counters only (``int k;``, PolyBench's style): names without an
    initial value, each mentioned in ``rest`` only inside ``for`` loops whose initializer
    assigns it (``for (k = 0; ...)``), so a rewrite that declares its own counters loses
    nothing by dropping it."""
    if decl.type != "declaration":
        return False
    ds = decl.children_by_field_name("declarator")
    if not ds or any(d.type != "identifier" for d in ds):
        return False
    for d in ds:
        word = parsed.text_of(d)
        for stmt in rest:
            for n in walk(stmt):
                if n.type != "identifier" or parsed.text_of(n) != word:
                    continue
                up = n.parent
                while up is not None and not (up.type == "for_statement" and _assigns_first(
                        up, word, parsed)):
                    up = up.parent
                if up is None:
                    return False
    return True


def _assigns_first(loop: tree_sitter.Node, word: str, parsed: Parsed) -> bool:
    init = loop.child_by_field_name("initializer")
    if init is None or init.type != "assignment_expression":
        return False
    return parsed.text_of(unparen(init.child_by_field_name("left"))) == word


def match(ctx: PassContext, counters: bool = False) -> Grid2D:
    """Matches ``ctx``'s kernel against the 2D pattern. ``counters``: declarations of loop
    counters between the indices and the guard (``int k;``, ``counter_only``) are skipped; for
    a pass whose rewrite declares its own counters (``tiled_matmul``), as the statements
    after the guard no longer hold their declaration.

    Raises:
        NoMatch: the kernel does not fit; the message says why, with the line.
    """
    parsed, body = readable_body_or(ctx, _fail)
    macros = file_macros(parsed)
    scope = Scope(macros=macros)
    stmts = named_children(body)
    indices, used = _index_declarations(stmts, parsed, scope)
    axes = sorted(a for a, _ in indices.values())
    if axes != ["x", "y"]:
        first = stmts[0] if stmts else body
        raise _fail("expected the body to start with the two global indices 'int col = "
                    "blockIdx.x * blockDim.x + threadIdx.x;' and 'int row = blockIdx.y * "
                    f"blockDim.y + threadIdx.y;', found '{_first_line(parsed.text_of(first))}' "
                    f"at line {parsed.line_of(first)}", line=parsed.line_of(first))
    while counters and used < len(stmts) and counter_only(stmts[used], stmts[used + 1:], parsed):
        used += 1  # ``int k;`` before the guard, for a later ``for (k = 0; ...)``
    if len(stmts) <= used:
        raise _fail(f"expected a bounds guard after the indices at line "
                    f"{parsed.line_of(stmts[used - 1])}, found nothing",
                    line=parsed.line_of(stmts[used - 1]))
    guard_stmt = stmts[used]
    where_line = parsed.line_of(guard_stmt)
    where = f"line {where_line}"
    names = set(indices)
    expected = ("expected the bounds guard 'if (row < rows && col < cols)' or 'if (row >= "
                "rows || col >= cols) return;'")
    if guard_stmt.type != "if_statement" or \
            guard_stmt.child_by_field_name("alternative") is not None:
        raise _fail(f"{expected} after the indices, found "
                    f"'{_first_line(parsed.text_of(guard_stmt))}' at {where}", line=where_line)
    cond = guard_stmt.child_by_field_name("condition")
    consequence = guard_stmt.child_by_field_name("consequence")
    inner = consequence
    if inner.type == "compound_statement" and len(named_children(inner)) == 1:
        inner = named_children(inner)[0]
    exit_ = inner.type == "return_statement" and not named_children(inner)
    parts = _conjuncts(cond, "||" if exit_ else "&&")
    bounds: dict[str, tree_sitter.Node] = {}
    for part in parts:
        got = _comparison(part, parsed, names, exit_)
        if got is None or got[0] in bounds:
            raise _fail(f"{expected}, found 'if {parsed.text_of(cond)}' at {where}",
                        line=where_line)
        bounds[got[0]] = got[1]
    if set(bounds) != names:
        missing = ", ".join(sorted(names - set(bounds)))
        raise _fail(f"the guard at {where} does not bound {missing}", line=where_line)
    if exit_:
        statements = tuple(stmts[used + 1:])
        guard = f"!({parsed.text_of(unparen(cond))})"
    else:
        if len(stmts) > used + 1:
            raise _fail(f"statements follow the bounds guard at line "
                        f"{parsed.line_of(stmts[used + 1])}; expected the guard to end the kernel",
                        line=parsed.line_of(stmts[used + 1]))
        statements = tuple(named_children(consequence)) \
            if consequence.type == "compound_statement" else (consequence,)
        guard = parsed.text_of(unparen(cond))
    if not statements:
        raise _fail(f"the guarded body at {where} is empty", line=where_line)
    made: dict[str, Axis] = {}
    for var, (axis, ctype) in indices.items():
        bnode = bounds[var]
        bpoly = poly_of(bnode, parsed, scope)
        if bpoly is None:
            raise _fail(f"the bound of {var} ('{parsed.text_of(bnode)}', {where}) is not an "
                        f"integer expression", line=where_line)
        made[axis] = Axis(var, ctype, axis, parsed.text_of(unparen(bnode)),
                          spec_text(bnode, parsed, ctx, macros), bpoly)
    for stmt in statements:
        for n in walk(stmt):
            if n.type == "assignment_expression" or n.type == "update_expression":
                target = n.child_by_field_name("left") or n.child_by_field_name("argument")
                if target is not None and unparen(target).type == "identifier" and \
                        parsed.text_of(unparen(target)) in names:
                    raise _fail(f"the body changes {parsed.text_of(unparen(target))} at line "
                                f"{parsed.line_of(n)}", line=parsed.line_of(n))
    return Grid2D(x=made["x"], y=made["y"], guard=guard, statements=statements, parsed=parsed,
                  body=body, macros=macros)
