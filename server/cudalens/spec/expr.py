"""Safe evaluation of harness spec expressions.

The language (see the spec format): integer and float literals (``1_000``, ``0x10``, ``1e-3``),
``+ - * / % << >>``, parentheses, unary minus, names taken from an environment, ``block.x``,
``block.y``, ``block.z`` and the functions ``ceil_div(a, b)``, ``min(a, ...)``, ``max(a, ...)``.

Arithmetic follows C, not Python, where the two differ: ``/`` between integers truncates toward
zero (C11 6.5.5p6) and ``%`` takes the sign of the dividend; with a float operand ``/`` is true
division. ``//`` and ``**`` are rejected. Expressions are parsed with Python's ``ast`` and
walked node by node over a whitelist; nothing is ever passed to ``eval``.

Errors are :class:`ExprError` (a ``ValueError``) whose message names the construct and quotes
the expression; callers add the file and line.
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Mapping
from typing import NamedTuple, Union

from cudalens.textfile import printable

Number = Union[int, float]

FUNCTIONS = ("ceil_div", "min", "max")
BLOCK = "block"
MAX_SHIFT = 63  # shifts beyond a 64-bit word are almost surely typos (1 << 240)


class ExprError(ValueError):
    """An expression is malformed, uses a construct outside the language, or cannot be evaluated."""


class Dim3(NamedTuple):
    """A block shape as expressions see it: ``block.x``, ``block.y``, ``block.z``."""

    x: int
    y: int = 1
    z: int = 1


_OPERATORS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Mod: "%",
    ast.LShift: "<<", ast.RShift: ">>",
}
_REJECTED_OPERATORS = {
    ast.FloorDiv: "'//' is not allowed: '/' between integers is already C integer division "
                  "(truncation toward zero)",
    ast.Pow: "'**' (power) is not allowed",
    ast.BitAnd: "operator '&' is not allowed",
    ast.BitOr: "operator '|' is not allowed",
    ast.BitXor: "operator '^' is not allowed",
    ast.MatMult: "operator '@' is not allowed",
}
_CONSTRUCTS = {
    ast.Compare: "comparison", ast.BoolOp: "'and'/'or'", ast.IfExp: "conditional expression",
    ast.Subscript: "subscript", ast.Lambda: "lambda", ast.Tuple: "tuple (a ',' outside a call)",
    ast.List: "list", ast.Dict: "dict", ast.Set: "set", ast.ListComp: "comprehension",
    ast.SetComp: "comprehension", ast.DictComp: "comprehension",
    ast.GeneratorExp: "comprehension", ast.Starred: "'*' unpacking", ast.JoinedStr: "string",
    ast.NamedExpr: "':=' assignment", ast.Await: "await", ast.Yield: "yield",
    ast.YieldFrom: "yield", ast.Slice: "slice",
}
_ALLOWED = ("+ - * / % << >>, parentheses, unary minus, numbers, names, block.x/.y/.z, "
            "ceil_div(a, b), min(a, ...), max(a, ...)")


def _reject(what: str, text: str) -> ExprError:
    return ExprError(f"{what} is not allowed in '{text}' (allowed: {_ALLOWED})")


# Longest expression accepted, in characters: far above any real size or launch expression,
# and low enough that parsing, checking and evaluating (all recursive over the syntax tree)
# stay within Python's recursion limit whatever the expression's shape.
MAX_CHARS = 512


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> ast.expr:
    """Parse and check ``text``; returns the root node. Raises :class:`ExprError`, also for
    an expression longer than ``MAX_CHARS`` characters."""
    source = text.strip()
    if not source:
        raise ExprError("expected an expression, found nothing")
    if len(source) > MAX_CHARS:
        raise ExprError(f"expression too long: {len(source)} characters, at most {MAX_CHARS} "
                        f"('{source[:40]}...'); name parts of it with 'size' lines")
    try:
        tree = ast.parse(source, mode="eval")
        _check(tree.body, source)
    except SyntaxError as e:
        raise ExprError(f"invalid expression '{source}': {e.msg}") from None
    except (RecursionError, MemoryError):
        raise ExprError(f"expression nested too deeply: '{source[:40]}...'; name parts of it "
                        f"with 'size' lines") from None
    except UnicodeEncodeError:  # a byte of a file that is not UTF-8 (``textfile``)
        raise ExprError(f"invalid expression '{printable(source)}': expected UTF-8 text, found "
                        f"a byte that is not") from None
    return tree.body


def _check(node: ast.AST, text: str) -> None:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise _reject(f"literal {node.value!r}", text)
    elif isinstance(node, ast.Name):
        if node.id == BLOCK:
            raise ExprError(f"'block' must be used as block.x, block.y or block.z in '{text}'")
    elif isinstance(node, ast.Attribute):
        base = node.value
        if not (isinstance(base, ast.Name) and base.id == BLOCK):
            raise _reject(f"attribute access '{ast.unparse(node)}'", text)
        if node.attr not in Dim3._fields:
            raise ExprError(f"expected block.x, block.y or block.z, found "
                            f"'block.{node.attr}' in '{text}'")
    elif isinstance(node, ast.BinOp):
        op = type(node.op)
        if op in _REJECTED_OPERATORS:
            raise ExprError(f"{_REJECTED_OPERATORS[op]} in '{text}'")
        if op not in _OPERATORS:  # pragma: no cover - every BinOp is listed above
            raise _reject(f"operator {op.__name__}", text)
        _check(node.left, text)
        _check(node.right, text)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, ast.USub):
            sym = {ast.UAdd: "+", ast.Not: "not", ast.Invert: "~"}.get(type(node.op), "?")
            raise _reject(f"unary '{sym}'", text)
        _check(node.operand, text)
    elif isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
        if name not in FUNCTIONS:
            raise _reject(f"call to '{name}'", text)
        if node.keywords:
            raise ExprError(f"{name}() takes no keyword arguments in '{text}'")
        if name == "ceil_div" and len(node.args) != 2:
            raise ExprError(f"ceil_div takes 2 arguments, found {len(node.args)} in '{text}'")
        if not node.args:
            raise ExprError(f"{name}() needs at least 1 argument in '{text}'")
        for a in node.args:
            _check(a, text)
    else:
        what = _CONSTRUCTS.get(type(node), type(node).__name__)
        raise _reject(what, text)


def names_in(text: str) -> set[str]:
    """The names ``text`` uses; ``block.x`` counts as ``block``, function names do not count.

    ``names_in("ceil_div(n, block.x)") == {"n", "block"}``. Raises :class:`ExprError` when the
    expression is malformed.
    """
    root = parse(text)
    functions = {id(n.func) for n in ast.walk(root) if isinstance(n, ast.Call)}
    found: set[str] = set()
    for node in ast.walk(root):
        if isinstance(node, ast.Attribute):
            found.add(BLOCK)
        elif isinstance(node, ast.Name) and id(node) not in functions:
            found.add(node.id)
    return found


def evaluate(text: str, env: Mapping[str, object]) -> Number:
    """Evaluate ``text`` with names from ``env`` (numbers; ``env["block"]`` a :class:`Dim3`).

    Returns an ``int`` when every operand is an integer and no true division happened, else a
    ``float``. Raises :class:`ExprError` for constructs outside the language, names missing
    from ``env``, division by zero, bad shifts, and non-finite results.
    """
    text = text.strip()
    value = _eval(parse(text), env, text)
    if isinstance(value, float) and not math.isfinite(value):
        raise ExprError(f"'{text}' evaluates to {value}, expected a finite number")
    return value


def _eval(node: ast.AST, env: Mapping[str, object], text: str) -> Number:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ExprError(f"undefined name '{node.id}' in '{text}'")
        value = env[node.id]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ExprError(f"name '{node.id}' in '{text}' is not a number")
        return value
    if isinstance(node, ast.Attribute):
        block = env.get(BLOCK)
        if block is None:
            raise ExprError(f"block.{node.attr} cannot be used here, in '{text}'")
        return int(getattr(Dim3(*block), node.attr))
    if isinstance(node, ast.UnaryOp):
        return -_eval(node.operand, env, text)
    if isinstance(node, ast.Call):
        args = [_eval(a, env, text) for a in node.args]
        name = node.func.id  # type: ignore[attr-defined]
        if name == "min":
            return min(args)
        if name == "max":
            return max(args)
        return ceil_div(args[0], args[1], text)
    if isinstance(node, ast.BinOp):
        a = _eval(node.left, env, text)
        b = _eval(node.right, env, text)
        return _binop(type(node.op), a, b, text)
    raise _reject(type(node).__name__, text)  # pragma: no cover - parse() rejected it


def _binop(op: type, a: Number, b: Number, text: str) -> Number:
    if op is ast.Add:
        return a + b
    if op is ast.Sub:
        return a - b
    if op is ast.Mult:
        return a * b
    both_int = isinstance(a, int) and isinstance(b, int)
    if op in (ast.Div, ast.Mod) and b == 0:
        raise ExprError(f"division by zero in '{text}'")
    if op is ast.Div:
        return c_div(a, b) if both_int else a / b  # type: ignore[arg-type]
    if op is ast.Mod:
        return c_mod(a, b) if both_int else math.fmod(a, b)  # type: ignore[arg-type]
    # shifts
    sym = _OPERATORS[op]
    if not both_int:
        raise ExprError(f"'{sym}' needs integer operands, found {a!r} {sym} {b!r} in '{text}'")
    if not 0 <= b <= MAX_SHIFT:  # type: ignore[operator]
        raise ExprError(f"shift count must be 0 to {MAX_SHIFT}, found {b} in '{text}'")
    return a << b if op is ast.LShift else a >> b  # type: ignore[operator]


def c_div(a: int, b: int) -> int:
    """C integer division: the quotient truncated toward zero (``-7 / 2 == -3``)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_mod(a: int, b: int) -> int:
    """C remainder: ``a - (a / b) * b`` with C division, so it has the dividend's sign."""
    return a - c_div(a, b) * b


def ceil_div(a: Number, b: Number, text: str = "") -> int:
    """The ceiling of ``a / b`` for integers: ``ceil_div(10, 4) == 3``, ``ceil_div(-7, 2) == -3``.
    """
    where = f" in '{text}'" if text else ""
    if not (isinstance(a, int) and isinstance(b, int)):
        raise ExprError(f"ceil_div needs integer arguments, found ({a!r}, {b!r}){where}")
    if b == 0:
        raise ExprError(f"division by zero in ceil_div{where}")
    return -((-a) // b)
