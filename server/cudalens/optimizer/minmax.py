"""Maximum and minimum written as a comparison, and the combine kinds the reductions share.

Public kernels often spell a running maximum without ``fmaxf``::

    if (x > m) m = x;                  if (val > maxval) { maxval = val; }
    m = (x > m) ? x : m;               m = (m > x) ? m : x;

``match`` reads such a statement as (target, value, kind), the target and the value being
the two sides of the comparison (compared as text, whitespace and parentheses aside), and
``kind`` a combine kind that the reductions (``block_reduction``, ``warp_per_row``,
``row_group``) store where they store ``"+"`` or a function name (``fmaxf``...). A
conditional kind records the comparison with the new value on the left, ``other OP acc``,
and what the statement keeps when it is true:

- ``"if>"``, ``"if>="`` (max), ``"if<"``, ``"if<="`` (min): ``acc = other`` when
  ``other OP acc`` holds (``if (x > m) m = x;``, ``m = (x > m) ? x : m;``, ``m = (m < x) ?
  x : m;``). A NaN ``other`` makes the comparison false: it is skipped, as ``fmaxf`` skips it.
- ``"keep<"``, ``"keep<="`` (max), ``"keep>"``, ``"keep>="`` (min): ``acc`` kept when
  ``other OP acc`` holds, else ``acc = other`` (``m = (m > x) ? m : x;``). A NaN ``other``
  makes the comparison false: it is taken, unlike ``fmaxf``.

For inputs without NaN every kind of one direction gives the same value whatever the
order of the combination (up to the sign of a zero result: ``-0.0`` and ``0.0`` compare
equal, and which one a tie keeps depends on the order). ``combine_lines`` and ``select``
write a kind back in its own comparison, so each combine step of a rewrite treats its two
values as the original's statement would; with NaN inputs the original's result depends on
where the NaNs sit in its order, which the rewrites change (``NAN_CAVEAT``, quoted in the
passes' explanations). IEEE 754-2008, 5.11 (comparisons with NaN are false); CUDA C++
Programming Guide, "Mathematical Functions" (``fmaxf``: a NaN argument is ignored).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.kernel_model.syntax import Parsed, named_children, unparen

MAX_FUNCTIONS = ("fmaxf", "fmax", "max")
MIN_FUNCTIONS = ("fminf", "fmin", "min")
MAX_KINDS = ("if>", "if>=", "keep<", "keep<=")
MIN_KINDS = ("if<", "if<=", "keep>", "keep>=")
CONDITIONAL = MAX_KINDS + MIN_KINDS

NAN_CAVEAT = ("the maximum or minimum written as a comparison keeps its comparison in every "
              "combine step, so for inputs without NaN the result is the original's; where "
              "an input is NaN, which values survive depends on the order of combination, "
              "which the rewrite changes")

_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">="}


def is_max(kind: str) -> bool:
    """``kind`` combines by maximum (a function name or a conditional kind)."""
    return kind in MAX_FUNCTIONS or kind in MAX_KINDS


def is_min(kind: str) -> bool:
    """``kind`` combines by minimum (a function name or a conditional kind)."""
    return kind in MIN_FUNCTIONS or kind in MIN_KINDS


def is_conditional(kind: str) -> bool:
    """``kind`` is a comparison spelling (module doc), not ``"+"`` or a function name."""
    return kind in CONDITIONAL


@dataclass(frozen=True)
class Conditional:
    """A max/min statement: ``target`` (the accumulator's node in the assignment), ``value``
    (the new value's node in the assignment) and ``kind`` (module doc); ``statement`` the
    whole ``if`` or assignment."""

    statement: tree_sitter.Node
    target: tree_sitter.Node
    value: tree_sitter.Node
    kind: str


def _same(a: tree_sitter.Node, b: tree_sitter.Node, p: Parsed) -> bool:
    return "".join(p.text_of(unparen(a)).split()) == "".join(p.text_of(unparen(b)).split())


def _compare(cond: tree_sitter.Node, target: tree_sitter.Node, value: tree_sitter.Node,
             p: Parsed) -> Optional[str]:
    """The operator of ``cond`` written as ``value OP target``; None when ``cond`` is not a
    comparison of those two."""
    cond = unparen(cond)
    if cond.type != "binary_expression":
        return None
    op = cond.child_by_field_name("operator").type
    if op not in _FLIP:
        return None
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    if _same(left, value, p) and _same(right, target, p):
        return op
    if _same(left, target, p) and _same(right, value, p):
        return _FLIP[op]
    return None


def _single(stmt: tree_sitter.Node) -> Optional[tree_sitter.Node]:
    """The expression of ``stmt`` (through ``{ }`` of one statement), or None."""
    while stmt is not None and stmt.type == "compound_statement":
        inner = named_children(stmt)
        if len(inner) != 1:
            return None
        stmt = inner[0]
    if stmt is None or stmt.type != "expression_statement" or not named_children(stmt):
        return None
    return named_children(stmt)[0]


def match(node: tree_sitter.Node, p: Parsed) -> Optional[Conditional]:
    """``node`` (an ``if`` statement, an expression statement or an assignment) read as a
    conditional max/min (module doc), or None. The value must not mention the target."""
    if node.type == "expression_statement":
        inner = _single(node)
        if inner is None:
            return None
        node = inner
    if node.type == "if_statement":
        if node.child_by_field_name("alternative") is not None:
            return None
        assign = _single(node.child_by_field_name("consequence"))
        if assign is None or assign.type != "assignment_expression" or \
                assign.child_by_field_name("operator").type != "=":
            return None
        target, value = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        op = _compare(node.child_by_field_name("condition"), target, value, p)
        if op is None or _mentions(value, target, p):
            return None
        return Conditional(node, target, value, f"if{op}")
    if node.type != "assignment_expression" or \
            node.child_by_field_name("operator").type != "=":
        return None
    target = node.child_by_field_name("left")
    right = unparen(node.child_by_field_name("right"))
    if right.type != "conditional_expression":
        return None
    yes, no = right.child_by_field_name("consequence"), right.child_by_field_name("alternative")
    if yes is None or no is None:
        return None
    if _same(no, target, p):  # acc = C ? value : acc
        value, kind = yes, "if"
    elif _same(yes, target, p):  # acc = C ? acc : value
        value, kind = no, "keep"
    else:
        return None
    op = _compare(right.child_by_field_name("condition"), target, value, p)
    if op is None or _mentions(value, target, p):
        return None
    return Conditional(node, target, value, f"{kind}{op}")


def _mentions(node: tree_sitter.Node, target: tree_sitter.Node, p: Parsed) -> bool:
    want = "".join(p.text_of(unparen(target)).split())
    stack = [node]
    while stack:
        n = stack.pop()
        if "".join(p.text_of(n).split()) == want:
            return True
        stack.extend(n.named_children)
    return False


def label(kind: str) -> str:
    """How an explanation names ``kind``: ``sum``, the function (``fmaxf``), or ``max
    (if (x > m) m = x)`` for a conditional kind, in its comparison."""
    if kind == "+":
        return "sum"
    if not is_conditional(kind):
        return kind
    what = "max" if is_max(kind) else "min"
    spelled = f"if (x {_op(kind)} m) m = x" if kind.startswith("if") else \
        f"m = (x {_op(kind)} m) ? m : x"
    return f"{what} ({spelled})"


def _op(kind: str) -> str:
    return kind[2:] if kind.startswith("if") else kind[4:]


def select(kind: str, acc: str, other: str) -> str:
    """An expression combining the plain values ``acc`` and ``other`` by ``kind``:
    ``fmaxf(acc, other)`` for a function, ``(other > acc) ? other : acc`` for ``"if>"``,
    ``(other < acc) ? acc : other`` for ``"keep<"``.

    Raises:
        ValueError: ``kind`` is ``"+"`` or unknown.
    """
    if kind in MAX_FUNCTIONS or kind in MIN_FUNCTIONS:
        return f"{kind}({acc}, {other})"
    if kind not in CONDITIONAL:
        raise ValueError(f"expected a max or min combine kind, found {kind!r}")
    test = f"{other} {_op(kind)} {acc}"
    return f"({test}) ? {other} : {acc}" if kind.startswith("if") else \
        f"({test}) ? {acc} : {other}"


def combine_lines(acc: str, kind: str, other: str,
                  temp: Optional[tuple[str, str]] = None) -> list[str]:
    """The statements combining ``other`` into ``acc`` by ``kind``: ``acc += other;``,
    ``acc = fmaxf(acc, other);`` or, for a conditional kind, its comparison (``if (other >
    acc) acc = other;``, ``acc = (other < acc) ? acc : other;``). ``temp`` = (C type, fresh name): ``other`` is first stored in that
    constant, so an expression with effects or a warp shuffle (which every lane must execute)
    is evaluated once, outside the comparison's branch."""
    if kind == "+":
        return [f"{acc} += {other};"]
    if not is_conditional(kind):
        return [f"{acc} = {kind}({acc}, {other});"]
    lines = []
    if temp is not None:
        lines.append(f"const {temp[0]} {temp[1]} = {other};")
        other = temp[1]
    lines.append(f"if ({other} {_op(kind)} {acc}) {acc} = {other};" if kind.startswith("if")
                 else f"{acc} = {select(kind, acc, other)};")
    return lines


def combine_text(acc: str, kind: str, other: str,
                 temp: Optional[tuple[str, str]] = None) -> str:
    """``combine_lines`` on one line; two or more statements in braces."""
    lines = combine_lines(acc, kind, other, temp)
    return lines[0] if len(lines) == 1 else "{ " + " ".join(lines) + " }"
