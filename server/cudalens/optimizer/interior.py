"""Integer guards proved over a box of indices: where a thread computes a tile of outputs
(``stencil2d_regs``), the bounds tests of the original's statements (``if (r >= 0 && r < rows
&& ...)``) usually hold for every output of the tile and every tap of the stencil; one test
per tile then replaces a test per output and tap.

A guard is proved over the box ``B`` (each index variable between two bounds: the tile's
``row`` in ``[r0, r0 + RY - 1]``, ``col`` in ``[c0, c0 + RX - 1]``, each constant-bound loop
variable in its range) when it is built with ``&&``, ``||``, ``!`` and parentheses from
comparisons ``A OP B`` (``<``, ``<=``, ``>``, ``>=``, ``==``, ``!=``) of integer polynomials
(``kernel_model.affine.poly_of``: locals folded, object-like macros expanded) that are affine
in the box's variables with constant coefficients, everything else in them a scalar
parameter. An affine function on a box takes its extremes at the box's corners, so
``max_B (A - B) < 0`` is exact for ``A < B`` everywhere in ``B``; the extreme is the constant
part (integers, decided here) plus run-time terms (the scalars and the tile's origin), which
become one condition evaluated once per tile in 64-bit arithmetic. A guard may be proved true
or false (an early ``if (col >= cols) return;``), whole or conjunct by conjunct.

Integer semantics: where every name in a comparison has a signed integer type the
comparison is the mathematical one (signed overflow is undefined in the original, C++
[expr.pre]/4). Where an ``unsigned`` (32-bit) name takes part and every name is 32 bits
wide, the arithmetic is modulo 2^32 throughout ([basic.fundamental]) and equal to the
integers' when each side's value lies in ``[0, 2^31 - 1]``: those ranges are added to the
tile's condition. Anything else (casts, which ``poly_of`` would look through, narrower or
mixed-width unsigned types, literals with suffixes, ``sizeof``) is not proved.

``Proofs.executed(node)`` tells whether a statement inside the box's code runs for every
point of the box and every iteration of its loops: every enclosing ``if`` proved to take
that branch, every enclosing ``for`` a constant-bound loop, and every earlier statement that
jumps (``return``, ``continue``, ``break``, ``goto``) an ``if`` proved not to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Optional

import tree_sitter

from cudalens.kernel_model.affine import Scope, poly_of
from cudalens.kernel_model.syntax import Parsed, named_children, walk
from cudalens.kernel_model.edits import Edit
from cudalens.spec.poly import Poly

INT32_MAX = 2 ** 31 - 1

_SIGNED = {"int", "long", "long long", "long int", "long long int", "signed", "signed int",
           "int32_t", "int64_t", "ptrdiff_t", "ssize_t", "intptr_t"}
_SIGNED32 = {"int", "signed", "signed int", "int32_t"}
_UNSIGNED32 = {"unsigned", "unsigned int", "uint32_t", "uint"}
_COMPARE = {"<", "<=", ">", ">=", "==", "!="}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_JUMPS = ("return_statement", "continue_statement", "break_statement", "goto_statement")


@dataclass(frozen=True)
class Box:
    """The ranges proofs hold over: ``tile`` maps an index variable to ``(origin, extent)``
    (the variable runs over ``origin .. origin + extent - 1``, ``origin`` C text evaluated per
    tile); ``loops`` maps a loop variable to its constant ``(lowest, highest)``; ``scalars``
    are the names whose values are fixed for the launch (the kernel's scalar parameters);
    ``types`` gives each name's declared C type (without ``const``)."""

    tile: Mapping[str, tuple[str, int]]
    loops: Mapping[str, tuple[int, int]]
    scalars: frozenset[str]
    types: Mapping[str, str]


@dataclass
class Proofs:
    """What was proved: ``edits`` replace each proved guard (or conjunct) with ``true`` or
    ``false``; ``conditions`` (C text, sums in 64-bit arithmetic) must all hold at run time for the
    tile; ``values`` maps a proved node's byte span to its value."""

    edits: list[Edit] = field(default_factory=list)
    found: list = field(default_factory=list)
    values: dict[tuple[int, int], bool] = field(default_factory=dict)

    @property
    def conditions(self) -> list[str]:
        return [c.text() for c in _merged(self.found)]

    def value(self, node: tree_sitter.Node) -> Optional[bool]:
        return self.values.get((node.start_byte, node.end_byte))

    def executed(self, node: tree_sitter.Node, root: tree_sitter.Node,
                 box: Box, parsed: Parsed) -> bool:
        """Whether ``node`` (inside ``root``'s statements) runs for every point of the box
        and every iteration of its enclosing loops (module doc)."""
        cur = node
        while cur is not None and cur != root:
            parent = cur.parent
            if parent is None:
                return False
            t = parent.type
            if t == "if_statement":
                cond = _condition(parent)
                if cur == parent.child_by_field_name("consequence"):
                    if cond is None or self.value(cond) is not True:
                        return False
                elif cur != parent.child_by_field_name("condition"):
                    if cond is None or self.value(cond) is not False:
                        return False
            elif t == "else_clause":
                pass  # the if_statement above decides
            elif t == "for_statement":
                var = _for_var(parent, parsed)
                if cur == parent.child_by_field_name("body") and var not in box.loops:
                    return False
            elif t == "compound_statement":
                for sib in named_children(parent):
                    if sib == cur:
                        break
                    if not self._never_jumps(sib):
                        return False
            elif t in ("while_statement", "do_statement", "switch_statement",
                       "conditional_expression", "case_statement", "labeled_statement"):
                return False
            cur = parent
        return cur == root

    def _never_jumps(self, stmt: tree_sitter.Node) -> bool:
        jumps = [n for n in walk(stmt) if n.type in _JUMPS]
        if not jumps:
            return True
        if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
            return False
        cond = _condition(stmt)
        return cond is not None and self.value(cond) is False


@dataclass(frozen=True)
class _Linear:
    """``sum(coef * names) + const OP 0`` (``names`` the C names multiplied)."""

    terms: tuple[tuple[int, tuple[str, ...]], ...]
    op: str
    const: int

    def text(self) -> str:
        """C text with the positive terms left and the others right (``r0 + 2 < rows`` for
        ``r0 - rows + 2 < 0``); a side that adds or multiplies is computed in 64 bits
        (``(long long)r0 + 2``), the other one converted by the comparison, so no 32-bit
        sum can wrap; a lone name against a constant needs no cast."""
        left = [(c, n) for c, n in self.terms if c > 0]
        right = [(-c, n) for c, n in self.terms if c < 0]
        k = self.const
        kl, kr = (k if k > 0 else 0), (-k if k < 0 else 0)
        lone_l, lone_r = _lone(left, kl), _lone(right, kr)
        # a lone name is converted by the comparison when the other side is 64-bit or a
        # non-zero constant; against a lone name or 0 it is widened itself
        plain_l = lone_l and not lone_r and not (not right and kr == 0)
        plain_r = lone_r and not (not left and kl == 0)
        return f"{_side(left, kl, plain_l)} {self.op} {_side(right, kr, plain_r)}"


def _lone(terms: list[tuple[int, tuple[str, ...]]], const: int) -> bool:
    return len(terms) == 1 and const == 0 and terms[0][0] == 1 and len(terms[0][1]) == 1


def _side(terms: list[tuple[int, tuple[str, ...]]], const: int, plain: bool) -> str:
    """``sum(coef * names) + const`` (coefficients and ``const`` non-negative) as C text,
    in 64 bits unless ``plain`` (a lone name the comparison converts, ``_Linear.text``):
    a name against a name would take the usual arithmetic conversions (a negative int
    against an unsigned compares as a large value, C++ [expr.arith.conv]), an unsigned name
    against 0 draws nvcc's pointless-comparison warning."""
    if not terms:
        return str(const)
    parts = []
    for coef, names in terms:
        first = names[0] if plain else f"(long long){names[0]}"
        prod = " * ".join([first, *names[1:]])
        parts.append(prod if coef == 1 else f"{coef} * {prod}")
    return " + ".join(parts) + (f" + {const}" if const else "")


@dataclass(frozen=True)
class _Either:
    """One of two sets of conditions."""

    first: tuple
    second: tuple

    def text(self) -> str:
        a = " && ".join(c.text() for c in self.first)
        b = " && ".join(c.text() for c in self.second)
        return f"({a}) || ({b})"


def _merged(conds: list) -> list:
    """``conds`` without repeats, linear conditions over the same terms and operator kept
    only in their strongest form."""
    strongest: dict = {}
    rest = []
    for c in conds:
        if isinstance(c, _Linear):
            key = (c.terms, c.op)
            old = strongest.get(key)
            if old is None:
                strongest[key] = c
            elif (c.op in ("<", "<=")) == (c.const > old.const):
                strongest[key] = c
        elif c not in rest:
            rest.append(c)
    return list(strongest.values()) + rest


def _leaves(stmt: tree_sitter.Node) -> bool:
    """Whether ``stmt`` can leave the code around it: a ``return`` or ``goto`` anywhere, a
    ``break`` or ``continue`` outside the loops (and switches) inside it."""
    stack = [(stmt, False)]
    while stack:
        n, in_loop = stack.pop()
        if n.type in ("return_statement", "goto_statement"):
            return True
        if n.type in ("break_statement", "continue_statement") and not in_loop:
            return True
        inner = in_loop or n.type in ("for_statement", "while_statement", "do_statement",
                                      "switch_statement")
        stack += [(c, inner) for c in n.children]
    return False


def _condition(if_stmt: tree_sitter.Node) -> Optional[tree_sitter.Node]:
    c = if_stmt.child_by_field_name("condition")
    if c is None:
        return None
    inner = named_children(c) if c.type == "condition_clause" else [c]
    return inner[0] if len(inner) == 1 else None


def _for_var(loop: tree_sitter.Node, parsed: Parsed) -> Optional[str]:
    from cudalens.kernel_model.loops import for_header

    h = for_header(loop, parsed)
    return h.var if h is not None else None


def _unparen(node: tree_sitter.Node) -> tree_sitter.Node:
    while node.type == "parenthesized_expression":
        inner = named_children(node)
        if len(inner) != 1:
            return node
        node = inner[0]
    return node


class _Prover:
    def __init__(self, parsed: Parsed, scope: Scope, box: Box):
        self.parsed, self.scope, self.box = parsed, scope, box

    # -- names and types ------------------------------------------------------------
    def _widths(self, node: tree_sitter.Node, depth: int = 0) -> Optional[set[str]]:
        """The kinds of integer the expression computes with ('signed', 'signed32',
        'unsigned32'); None where it uses anything not proved here (casts, sizeof, suffixed
        literals, narrow or 64-bit unsigned types, unknown names)."""
        if depth > 8:
            return None
        kinds: set[str] = set()
        for n in walk(node):
            t = n.type
            if t in ("cast_expression", "sizeof_expression", "call_expression",
                     "template_function", "subscript_expression", "field_expression",
                     "pointer_expression", "assignment_expression", "update_expression"):
                return None
            if t == "number_literal":
                if re.search(r"[uUlL]$", self.parsed.text_of(n)):
                    return None
                kinds.add("signed32")
            elif t == "identifier":
                name = self.parsed.text_of(n)
                if name in self.scope.locals:
                    p2, init = self.scope.locals[name]
                    sub = _Prover(p2, self.scope, self.box)._widths(init, depth + 1)
                    if sub is None:
                        return None
                    kinds |= sub
                    typ = self.box.types.get(name)
                    if typ is None:
                        return None
                    kind = _kind(typ)
                    if kind is None:
                        return None
                    kinds.add(kind)
                    continue
                macro = self.scope.macros.get(name)
                if macro is not None:
                    if macro.params is not None or re.search(
                            r"\d[uUlL]|\b(unsigned|long|short|char|size_t|sizeof)\b|\(\s*\w+\s*\)",
                            macro.body):
                        return None
                    kinds.add("signed32")
                    continue
                typ = self.box.types.get(name)
                kind = _kind(typ) if typ is not None else None
                if kind is None:
                    return None
                kinds.add(kind)
        return kinds

    # -- extremes ---------------------------------------------------------------------
    def _extreme(self, p: Poly, high: bool) -> Optional[tuple[int, list]]:
        """(constant, run-time terms) of the largest (``high``) or smallest value of ``p``
        over the box; None when ``p`` is not affine in the box with constant coefficients
        or uses a name that is neither in the box nor a scalar."""
        const, terms = 0, []
        for mono, coef in p.terms:
            box_vars = [v for v in mono if v in self.box.tile or v in self.box.loops]
            if any(v not in self.box.tile and v not in self.box.loops and
                   v not in self.box.scalars for v in mono):
                return None
            if not box_vars:
                if not mono:
                    const += coef
                else:
                    terms.append((coef, tuple(mono)))
                continue
            if len(mono) != 1:
                return None
            v = mono[0]
            if v in self.box.loops:
                lo, hi = self.box.loops[v]
                const += max(coef * lo, coef * hi) if high else min(coef * lo, coef * hi)
                continue
            origin, extent = self.box.tile[v]
            pick = (extent - 1) if (coef > 0) == high else 0
            const += coef * pick
            terms.append((coef, (origin,)))
        return const, terms

    def _holds(self, d: Poly, op: str) -> Optional[list[str]]:
        """Conditions under which ``d OP 0`` holds over the whole box; None if never
        provable (statically false or not affine)."""
        if op in ("==", "!="):
            if op == "==":
                lo, hi = self._extreme(d, False), self._extreme(d, True)
                if lo is None or hi is None or lo[1] or hi[1] or lo[0] != 0 or hi[0] != 0:
                    return None
                return []
            a, b = self._holds(d, ">"), self._holds(d, "<")
            if a is not None and not a:
                return []
            if b is not None and not b:
                return []
            if a is None and b is None:
                return None
            if a is None:
                return b
            if b is None:
                return a
            return [_Either(tuple(a), tuple(b))]
        high = op in ("<", "<=")
        e = self._extreme(d, high)
        if e is None:
            return None
        const, terms = e
        if not terms:
            ok = {"<": const < 0, "<=": const <= 0, ">": const > 0, ">=": const >= 0}[op]
            return [] if ok else None
        return [_Linear(tuple(sorted(terms, key=lambda t: (-t[0], t[1]))), op, const)]

    def _in_range(self, p: Poly) -> Optional[list[str]]:
        """Conditions that ``p``'s value lies in ``[0, INT32_MAX]`` over the box."""
        lo, hi = self._holds(p, ">="), self._holds(p - Poly.const(INT32_MAX), "<=")
        if lo is None or hi is None:
            return None
        return lo + hi

    def prove(self, node: tree_sitter.Node, want: bool) -> Optional[list[str]]:
        """Conditions under which ``node`` evaluates to ``want`` at every point of the box,
        or None."""
        node = _unparen(node)
        t = node.type
        if t == "unary_expression":
            op = node.child_by_field_name("operator")
            if op is not None and op.type == "!":
                return self.prove(node.child_by_field_name("argument"), not want)
            return None
        if t == "identifier" and self.parsed.text_of(node) in self.scope.locals and \
                self.box.types.get(self.parsed.text_of(node)) == "bool":
            p2, init = self.scope.locals[self.parsed.text_of(node)]
            return _Prover(p2, self.scope, self.box).prove(init, want)
        if t != "binary_expression":
            return None
        op = node.child_by_field_name("operator").type
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op in ("&&", "||"):
            if (op == "&&") == want:  # both sides must take ``want``
                a, b = self.prove(left, want), self.prove(right, want)
                return a + b if a is not None and b is not None else None
            a = self.prove(left, want)  # either side taking ``want`` decides
            return a if a is not None else self.prove(right, want)
        if op not in _COMPARE:
            return None
        kinds_l, kinds_r = self._widths(left), self._widths(right)
        if kinds_l is None or kinds_r is None:
            return None
        kinds = kinds_l | kinds_r
        pl, pr = poly_of(left, self.parsed, self.scope), poly_of(right, self.parsed, self.scope)
        if pl is None or pr is None:
            return None
        conds: list[str] = []
        if "unsigned32" in kinds:
            if "signed" in kinds:
                return None  # a 64-bit signed name with a 32-bit unsigned one
            for side in (pl, pr):
                r = self._in_range(side)
                if r is None:
                    return None
                conds += r
        got = self._holds(pl - pr, op if want else _NEGATE[op])
        return None if got is None else conds + got


def _kind(ctype: str) -> Optional[str]:
    t = " ".join(ctype.replace("const", " ").replace("volatile", " ").split())
    if t in _SIGNED32:
        return "signed32"
    if t in _SIGNED:
        return "signed"
    if t in _UNSIGNED32:
        return "unsigned32"
    return None


def prove_guards(statements: list[tree_sitter.Node], parsed: Parsed, scope: Scope,
                 box: Box) -> Proofs:
    """Every guard in ``statements`` (conditions of ``if`` statements and of ``?:``
    expressions) proved over ``box`` where it can be, whole or, where not, its ``&&`` /
    ``||`` operands one by one (module doc); the result's ``edits`` (byte offsets of the
    file) write the proved ones as ``true`` / ``false``."""
    out = Proofs()
    prover = _Prover(parsed, scope, box)

    origins = {(origin,) for origin, _ in box.tile.values()}

    def on_tile(c) -> bool:
        if isinstance(c, _Linear):
            return any(names in origins for _, names in c.terms)
        return any(on_tile(x) for x in (*c.first, *c.second))

    def record(node: tree_sitter.Node, want: bool) -> bool:
        conds = prover.prove(node, want)
        # a guard whose run-time conditions do not move with the tile (``if (flag)``,
        # ``if (n > 0)``) is not an edge test: kept, so a launch where it fails still takes
        # the fast copy
        if conds is None or (conds and not any(on_tile(c) for c in conds)):
            return False
        out.values[(node.start_byte, node.end_byte)] = want
        out.edits.append(Edit(node.start_byte, node.end_byte, "true" if want else "false"))
        out.found += conds
        return True

    def simplify(node: tree_sitter.Node, want: bool) -> None:
        """``node`` proved to take ``want``, else each operand of an ``&&`` chain proved
        true (``want`` true) or of an ``||`` chain proved false (``want`` false)."""
        node = _unparen(node)
        if record(node, want):
            return
        if node.type == "binary_expression" and \
                node.child_by_field_name("operator").type == ("&&" if want else "||"):
            simplify(node.child_by_field_name("left"), want)
            simplify(node.child_by_field_name("right"), want)

    def expected(cond: tree_sitter.Node, leaves: bool) -> bool:
        """The value a tile whose outputs are computed sees: a branch that leaves (``if
        (col >= cols) return;``) or an ``||`` of tests (``x < 0 || x >= n``) is the edge
        case, not taken; an ``&&`` of tests (``r >= 0 && r < rows``) or a single one is
        taken. Only that value is proved: proving the other one would be sound too but
        would add conditions no interior tile meets."""
        c = _unparen(cond)
        either = c.type == "binary_expression" and \
            c.child_by_field_name("operator").type == "||"
        return not (leaves or either)

    for stmt in statements:
        for n in walk(stmt):
            if n.type == "if_statement":
                cond = _condition(n)
                if cond is not None:
                    then = n.child_by_field_name("consequence")
                    simplify(cond, expected(cond, then is not None and _leaves(then)))
            elif n.type == "conditional_expression":
                cond = n.child_by_field_name("condition")
                if cond is not None:
                    simplify(cond, expected(cond, False))
    # a proved if's condition node is the unparenthesized one; record it under the
    # condition itself too, so ``executed`` finds it
    for stmt in statements:
        for n in walk(stmt):
            if n.type == "if_statement":
                cond = _condition(n)
                if cond is not None and out.value(cond) is None:
                    v = out.value(_unparen(cond))
                    if v is not None:
                        out.values[(cond.start_byte, cond.end_byte)] = v
    return out


_EFFECTS = ("call_expression", "assignment_expression", "update_expression")


def unused_declarations(statements: list[tree_sitter.Node], parsed: Parsed,
                        edits: list[Edit]) -> list[Edit]:
    """Edits deleting the local declarations of ``statements`` that nothing reads once
    ``edits`` are applied (``int r = row + dy;`` whose only use was a guard proved
    ``true``), each its whole line where it stands alone on one: a declaration statement
    of one initialized name, its initializer free of calls, assignments and ``++``/``--``
    and untouched by ``edits``; a name that appears in a replacement's text counts as
    read. Without them nvcc warns "variable declared but never referenced" (#177)."""
    spans = [(e.start, e.end) for e in edits]

    def covered(n: tree_sitter.Node) -> bool:
        return any(a <= n.start_byte and n.end_byte <= b for a, b in spans)

    def touched(n: tree_sitter.Node) -> bool:
        return any(a < n.end_byte and n.start_byte < b for a, b in spans)

    # a macro's body may name a local (``#define AT (r * cols + c)``)
    defines = [line for line in parsed.data.decode("utf-8", "replace").splitlines()
               if line.lstrip().startswith("#") and "define" in line]
    top = {(s.start_byte, s.end_byte) for s in statements}
    out: list[Edit] = []
    for stmt in statements:
        for d in walk(stmt):
            if d.type != "declaration" or d.parent is None or \
                    d.parent.type != "compound_statement" or touched(d):
                continue
            inits = [c for c in named_children(d) if c.type == "init_declarator"]
            if len(inits) != 1 or len([c for c in named_children(d)
                                       if c.type.endswith("declarator")]) != 1:
                continue
            name_node = inits[0].child_by_field_name("declarator")
            value = inits[0].child_by_field_name("value")
            if name_node is None or name_node.type != "identifier" or value is None or \
                    any(n.type in _EFFECTS for n in walk(value)):
                continue
            name = parsed.text_of(name_node)
            word = re.compile(rf"\b{re.escape(name)}\b")
            if any(word.search(e.text) for e in edits) or any(
                    word.search(line) for line in defines):
                continue
            used = any(n.type == "identifier" and n != name_node and
                       parsed.text_of(n) == name and not covered(n)
                       for s in statements for n in walk(s))
            if used:
                continue
            start, end = d.start_byte, d.end_byte
            line_start = parsed.data.rfind(b"\n", 0, start) + 1
            line_end = parsed.data.find(b"\n", end)
            if (start, end) not in top and not parsed.data[line_start:start].strip() and \
                    line_end != -1 and \
                    not parsed.data[end:line_end].strip():
                start, end = line_start, line_end + 1
            out.append(Edit(start, end, ""))
    return out
