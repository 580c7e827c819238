"""What a kernel body does with its parameters, as far as spec inference needs to know.

From the tree-sitter-cuda tree of the body this finds, flow-insensitively:

- every access to a pointer parameter (directly or through a local pointer such as
  ``const float* row = x + r * cols``) with its kind (read, write, read-and-write, atomic,
  escape) and its element index as a :class:`Poly` when the index is affine-ish
  (``+ - *``, ``<<`` by a constant, casts) in locals, parameters and thread built-ins;
- exclusive upper bounds of local variables from bounds checks: ``if (i < n)``,
  ``if (i >= n) return;``, ``for (...; j < cols; ...)``, ``while``, ``(i < n) ? ... : ...``;
- the ``if`` each bounds check guards (``BodyFacts.scoped``), the start and step of ``for``
  loops (``BodyFacts.steps``), and for each access the conditional branches around it
  (``Access.branches``), so that a write can be seen to cover a later read;
- CSR row pointers: a loop from one element of an integer parameter to another, directly or
  through locals loaded from it (``BodyFacts.csr``);
- for each variable, the grid axis its initial value comes from (``blockIdx.x * blockDim.x +
  threadIdx.x`` is per-thread on x, ``blockIdx.x`` alone per-block on x).

Locals with exactly one definition and no later assignment are substituted by that definition,
so ``int idx = row * cols + col; y[idx] = ...`` indexes ``row * cols + col``.

Quotients and remainders of polynomials (``i / T``, ``i % C``, ``(i / C) % T``) become
opaque symbols, named by their text (``(i)/(T)``), recorded in ``BodyFacts.divisions`` with
their operands, so inference can bound them: ``a % b < b``, ``a / b <= max(a) / b``. A local
whose single definition loads an element of a pointer parameter (``int ix = idx[i];``) stays a
symbol too, recorded in ``BodyFacts.loads`` with the pointer it was read from.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Optional

from cudalens.kernel_model.pointer_uses import reference_argument_kind
from cudalens.kernel_model.syntax import (Node, Parsed, declared_name, int_literal,
                                          named_children, operator, strip, walk)
from cudalens.source.model import Kernel
from cudalens.spec import dtypes, templates
from cudalens.spec.defines import function_macros, object_macros
from cudalens.spec.loop_counts import LoopCount, bump_count, divide, loop_count, loops_around
from cudalens.spec.poly import Poly

# Read-only loads that take a pointer (CUDA C++ Programming Guide, "Read-Only Data Cache Load
# Function" and "Load Functions Using Cache Hints").
READ_ONLY_LOADS = frozenset({"__ldg", "__ldca", "__ldcg", "__ldcs", "__ldlu", "__ldcv"})

# Atomic functions that read the old value and write a new one (CUDA C++ Programming Guide,
# "Atomic Functions"); atomicExch only writes.
ATOMIC_RMW = frozenset({"atomicAdd", "atomicSub", "atomicMin", "atomicMax", "atomicInc",
                        "atomicDec", "atomicAnd", "atomicOr", "atomicXor", "atomicCAS"})
ATOMIC_WRITE = frozenset({"atomicExch"})
BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
_MAX_DEPTH = 32  # nesting of one index expression, substitutions included
_EXITS = ("return_statement", "break_statement", "continue_statement")
_UPPER_GUARD = {"<": 0, "<=": 1}  # v < B, v <= B (B + 1)
_UPPER_EXIT = {">=": 0, ">": 1}  # if (v >= B) return; / if (v > B) return; (B + 1)
_LOWER_GUARD = {">=": 0, ">": 1}  # v >= A, v > A (A + 1)
_LOWER_EXIT = {"<": 0, "<=": 1}  # if (v < A) return; / if (v <= A) return; (A + 1)
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass
class Access:
    """One use of pointer parameter ``param`` (the root of any local alias).

    ``kind``: ``read``, ``write``, ``update`` (read and written: ``+=``, ``++``, atomic
    read-modify-write), or ``escape`` (the pointer goes where the analysis cannot follow).
    ``index`` is the element index, None when unknown; ``data_indices`` the pointer
    parameters read inside the index (``src[idx[i]]`` has ``idx``); ``atomic`` the atomic
    function's name when there is one; ``text`` the source text, ``line`` 1-based.
    """

    param: str
    kind: str
    index: Optional[Poly]
    text: str
    line: int
    data_indices: tuple[str, ...] = ()
    direct_index: str = ""  # the index is exactly ``p[...]`` of this pointer parameter p
    atomic: str = ""
    # Byte offset in the source at which the access happens, for ordering a thread's accesses
    # in straight-line code: a read or update at its start; a plain write (``=``, atomicExch)
    # at the end of its assignment or call, since the right side is evaluated first
    # (``y[i] = y[i] + 1`` reads y before it writes it).
    order: int = 0
    # ids of the branches (of ``if``, ``?:``, ``switch``) the access sits in: a write covers a
    # later read of the same element only when every branch it sits in holds the read too
    branches: frozenset = frozenset()
    # the ``for`` loops around the access, innermost first, as (loop variable, header text
    # without spaces): a write covers a read of ``a[j]`` only from a loop over j with the same
    # header (``j <= t`` in one loop and ``j < T`` in the next cover different elements)
    loops: tuple[tuple[str, str], ...] = ()
    # bytes the access moves from its element on, when more than one element: a device
    # helper taking the pointer that loads or stores a 16-byte vector (``load128cs(p + i)``)
    width: int = 0


@dataclass
class BodyFacts:
    accesses: list[Access] = field(default_factory=list)
    bounds: dict[str, list[Poly]] = field(default_factory=dict)  # var -> exclusive upper bounds
    axes: dict[str, tuple[str, str]] = field(default_factory=dict)  # var -> (axis, thread|block)
    builtins: set[str] = field(default_factory=set)  # e.g. {"threadIdx.x", "threadIdx.y"}
    # symbol -> (operator "/" or "%", dividend, divisor), for the symbols of i / T, i % T
    divisions: dict[str, tuple[str, Poly, Poly]] = field(default_factory=dict)
    # local -> pointer parameter its value is loaded from (``int ix = idx[i];``)
    loads: dict[str, str] = field(default_factory=dict)
    # bounded variable -> its first definition as a polynomial (for the grid's step)
    values: dict[str, Poly] = field(default_factory=dict)
    # variable -> integer pointer parameter bounding it through an element
    # (``for (j = row_ptr[r]; j < row_ptr[r + 1]; j++)``: CSR row pointers)
    csr: dict[str, str] = field(default_factory=dict)
    # loop variable -> (start, step) of every ``for`` over it, when each starts at the same
    # integer and adds the same positive integer (``for (j = 0; j < TILE; j += ROWS)``: j
    # reaches only TILE - ROWS); names the file's constants may stand for are kept as text
    steps: dict[str, tuple[str, str]] = field(default_factory=dict)
    # variable -> (id of an ``if``'s consequence, bound) for the checks of ``if (c < W) ...``:
    # an access inside that consequence (``Access.branches``) takes that bound first (a
    # transpose's ``c`` is below W in one tile loop and below H in the other)
    scoped: dict[str, list[tuple[int, Poly]]] = field(default_factory=dict)
    # variable -> texts of lower bounds: checks ``if (i >= R)`` / ``if (i < R) return;`` and
    # the starts of ``for`` loops over it (``for (k = -R; ...)``), for reads before element 0
    lower: dict[str, list[str]] = field(default_factory=dict)
    # (guarded index, exclusive bound, id of the branch it guards or None) of each check of a
    # sum against a bound (``if (idx + 2 < N)``, ``(idx + i) < N ? a[idx + i] : 0``): an access
    # whose index is that sum plus a constant inside the branch is below the bound plus it
    expr_guards: list[tuple[Poly, Poly, Optional[int]]] = field(default_factory=list)
    # distance symbol of a counted ``for`` loop (``iz@40``: ``t * step`` in iteration t,
    # ``loop_counts``) -> the loop's variable; bounded in ``bounds`` and ``steps``
    iterations: dict[str, str] = field(default_factory=dict)
    # variables of grid-stride loops: ``for (i = ...; i < n; i += blockDim.x * gridDim.x)``
    grid_stride: set[str] = field(default_factory=set)
    # names read in the conditions of ``if``s and ``?:`` (a tile loop's ``k0 + tx < K``: the
    # kernel checks its last, partial tile)
    checked_names: set[str] = field(default_factory=set)
    # (loop variable, header as ``Access.loops`` writes it) -> (start, exclusive bound, step)
    # of that one ``for`` as polynomials (None where unknown): loops that reuse a variable
    # name with other bounds or steps (``loadOffset`` stepping by ``strideA`` up to ``BM`` in
    # one tile load, by ``strideB`` up to ``BK`` in the next) are told apart by their header
    # pointer parameter -> (function, line) of the first of its elements passed by non-const
    # reference to a device function that writes it (``acc(out[i], v)``)
    by_reference: dict[str, tuple[str, int]] = field(default_factory=dict)
    loop_ranges: dict[tuple[str, str], tuple[Optional[Poly], Optional[Poly], Optional[Poly]]] = \
        field(default_factory=dict)


class BodyAnalysis:
    """Runs the analysis; use :func:`analyze_body`."""

    def __init__(self, parsed: Parsed, body: Node, kernel: Kernel,
                 context: str = "", qualified: Optional[dict[str, int]] = None) -> None:
        self.parsed = parsed
        # the text device helpers are looked up in (headers and file), and the values of
        # qualified names the body uses (``x128::size``)
        self.context = context
        self.qualified = qualified or {}
        self.body = body
        self.pointers = {p.name for p in kernel.parameters if p.is_pointer}
        self.kernel_params = tuple(kernel.parameters)
        # the file's own macros too when no context is given (``validate.check_roles``)
        self.macros = function_macros(context or parsed.text)
        self.object_macros = object_macros(context or parsed.text)
        # re-parsed expansions of macros in conditions and bounds (``IN_RANGE(x, 0, n - 1)``,
        # ``BOUND``); while any exists, ``text`` reads each node from its own parse
        self.expansions: list[Parsed] = []
        self.int_params = {p.name for p in kernel.parameters
                           if not p.is_pointer and (dtypes.is_int_c_type(p.type) or (
                               context and dtypes.is_int_c_type(
                                   templates.resolve_type(p.type, context))))}
        self.int_pointers = {p.name for p in kernel.parameters if p.is_pointer and
                             dtypes.is_int_c_type(p.type.replace("*", " ").replace("const", " "))}
        self.defs: dict[str, list[Optional[Node]]] = defaultdict(list)
        self.assigned: dict[str, int] = defaultdict(int)
        # every definition of a local as (defining node, value node or None), for reaching
        # definitions; names also changed by compound assignment or ++/-- are in ``updated``
        self.def_sites: dict[str, list[tuple[Node, Optional[Node]]]] = defaultdict(list)
        self.updated: set[str] = set()
        self.pointer_locals: set[str] = set()
        # pointer parameter -> its bumps ``p += k``, ``p -= k``, ``p = p + k`` as (the
        # assignment node, sign, offset node): later uses index from the bumped pointer
        self.param_bumps: dict[str, list[tuple[Node, int, Node]]] = defaultdict(list)
        # integer local -> its bumps ``i += k``, ``i -= k``, ``i++`` as (node, sign, offset
        # node or None for 1); sign 0 for any other compound assignment (an unknown change)
        self.local_bumps: dict[str, list[tuple[Node, int, Optional[Node]]]] = defaultdict(list)
        self._loop_counts: dict[int, Optional[LoopCount]] = {}
        self.alias_decl: dict[int, str] = {}  # id of an init value node -> alias name
        # (var, bound node, +1?, id of the if's consequence it guards or None)
        self.raw_bounds: list[tuple[str, Node, int, Optional[int]]] = []
        # (sum node, bound node, +1?, branch id or None): checks of ``idx + k < N``
        self.raw_sum_bounds: list[tuple[Node, Node, int, Optional[int]]] = []
        self.bounded: dict[str, None] = {}  # bounded variables, in order of their checks
        self.raw_loops: list[tuple[Node, str, Node, Node]] = []  # (for, var, start, update)
        self.facts = BodyFacts()

    # -- pass 1: declarations, assignments, bounds ----------------------------------------

    def collect(self) -> None:
        self.flags = self._flags()
        for n in walk(self.body):
            t = n.type
            if t == "declaration":
                self._declaration(n)
            elif t == "assignment_expression":
                left = strip(n.child_by_field_name("left"))
                if left.type == "identifier" and self.text(left) in self.pointers:
                    self._param_bump(n, self.text(left))
                elif left.type == "identifier":
                    self.assigned[self.text(left)] += 1
                    if operator(n) != "=":
                        op = operator(n)
                        self.local_bumps[self.text(left)].append(
                            (n, {"+=": 1, "-=": -1}.get(op, 0), n.child_by_field_name("right")))
                    if operator(n) == "=":
                        self.def_sites[self.text(left)].append((n, n.child_by_field_name("right")))
                        if self.text(left) in self.pointer_locals:
                            # x = out + row * C: the alias now points into out (each use of x
                            # takes the definition that reaches it)
                            self.alias_decl[n.child_by_field_name("right").id] = self.text(left)
                    else:
                        self.updated.add(self.text(left))
            elif t == "update_expression":
                arg = strip(n.child_by_field_name("argument"))
                if arg.type == "identifier":
                    self.assigned[self.text(arg)] += 1
                    self.updated.add(self.text(arg))
                    self.local_bumps[self.text(arg)].append(
                        (n, 1 if "++" in self.text(n) else -1, None))
            elif t == "field_expression":
                text = self.text(n).replace(" ", "")
                if text.split(".")[0] in BUILTINS:
                    self.facts.builtins.add(text)
            elif t == "if_statement":
                cond = n.child_by_field_name("condition")
                self._checked(cond)
                consequence = n.child_by_field_name("consequence")
                exit_ = _is_exit(consequence)
                self._bounds(cond, exit_, None if exit_ or consequence is None
                             else consequence.id)
                if not exit_ and consequence is not None:
                    self._flag_bounds(cond, consequence.id)
            elif t == "for_statement":
                self._for_step(n)
                update = n.child_by_field_name("update")
                if update is not None and "gridDim" in self.text(update):
                    up = strip(update)
                    left = up.child_by_field_name("left") if up.type == \
                        "assignment_expression" else None
                    if left is not None and strip(left).type == "identifier":
                        self.facts.grid_stride.add(self.text(strip(left)))
                cond = n.child_by_field_name("condition")
                if cond is not None:
                    self._bounds(cond, False)
            elif t in ("while_statement", "do_statement", "conditional_expression"):
                cond = n.child_by_field_name("condition")
                arm = n.child_by_field_name("consequence")
                if t == "conditional_expression":
                    self._checked(cond)
                if cond is not None:
                    self._bounds(cond, False, arm.id if t == "conditional_expression" and
                                 arm is not None else None)

    def _checked(self, cond: Optional[Node]) -> None:
        if cond is not None:
            self.facts.checked_names |= {self.text(m) for m in walk(cond)
                                         if m.type == "identifier"}
            for m in walk(cond):
                macro = self.expanded(m) if m.type in ("call_expression", "identifier") \
                    else None
                if macro is not None:  # the names a macro's check reads
                    self.facts.checked_names |= {self.text(e) for e in walk(macro)
                                                 if e.type == "identifier"}

    def _flags(self) -> dict[str, list[tuple[Node, bool]]]:
        """Boolean locals that stand for bounds checks, as name -> [(condition, exit)]:
        ``bool ok = true;`` cleared only by ``if (C) ok = false;`` statements of the outer block
        (each C an exit-style check, ``x >= dimx || y >= dimy``), or ``bool ok = C;`` never
        assigned again (C a guard). FDTD3d's ``validr``/``validw``: ``if (ok) ...`` is then
        checked as C is."""
        decls: dict[str, Optional[Node]] = {}
        cleared: dict[str, list[Node]] = defaultdict(list)
        bad: set[str] = set()
        for n in walk(self.body):
            if n.type == "declaration" and n.parent is not None and n.parent.id == self.body.id \
                    and any(self.text(c) == "bool" for c in n.children
                            if c.type == "primitive_type"):
                for d in n.children_by_field_name("declarator"):
                    if d.type == "init_declarator":
                        name = declared_name(d.child_by_field_name("declarator"), self.parsed)
                        if name:
                            if name in decls:
                                bad.add(name)
                            decls[name] = d.child_by_field_name("value")
            elif n.type == "assignment_expression":
                left = strip(n.child_by_field_name("left"))
                if left.type != "identifier":
                    continue
                name = self.text(left)
                right = n.child_by_field_name("right")
                guard = self._clearing_if(n)
                if operator(n) == "=" and right is not None and self.text(right) == "false" \
                        and guard is not None:
                    cleared[name].append(guard)
                else:
                    bad.add(name)
            elif n.type == "update_expression":
                arg = strip(n.child_by_field_name("argument"))
                bad.add(self.text(arg))
        out: dict[str, list[tuple[Node, bool]]] = {}
        for name, value in decls.items():
            if name in bad or value is None:
                continue
            if self.text(value) == "true":
                if cleared.get(name):
                    out[name] = [(c, True) for c in cleared[name]]
            elif not cleared.get(name) and strip(value).type == "binary_expression":
                out[name] = [(value, False)]
        return out

    def _clearing_if(self, assign: Node) -> Optional[Node]:
        """The condition of the ``if`` of the outer block (no ``else``) whose consequence is
        only ``assign``'s statement, else None."""
        stmt = assign.parent
        if stmt is None or stmt.type != "expression_statement":
            return None
        node = stmt
        if node.parent is not None and node.parent.type == "compound_statement" and \
                len(named_children(node.parent)) == 1:
            node = node.parent
        parent = node.parent
        if parent is None or parent.type != "if_statement" or \
                parent.child_by_field_name("consequence") != node or \
                parent.child_by_field_name("alternative") is not None or \
                parent.parent is None or parent.parent.id != self.body.id:
            return None
        return parent.child_by_field_name("condition")

    def _flag_bounds(self, cond: Node, scope: int) -> None:
        """The checks a flag stands for (:meth:`_flags`) for an ``if (flag)`` or ``if (flag &&
        ...)``, scoped to its consequence."""
        cond = strip(cond)
        if cond.type == "binary_expression" and operator(cond) == "&&":
            self._flag_bounds(cond.child_by_field_name("left"), scope)
            self._flag_bounds(cond.child_by_field_name("right"), scope)
            return
        if cond.type == "identifier" and self.text(cond) in self.flags:
            for check, exit_ in self.flags[self.text(cond)]:
                self._bounds(check, exit_, scope)

    def _param_bump(self, n: Node, name: str) -> None:
        """Records ``p += k`` / ``p -= k`` / ``p = p + k`` of pointer parameter ``p``; any
        other assignment to it is a bump by an unknown offset."""
        op, right = operator(n), n.child_by_field_name("right")
        if op in ("+=", "-="):
            self.param_bumps[name].append((n, 1 if op == "+=" else -1, right))
            return
        value = strip(right) if right is not None else None
        if op == "=" and value is not None and value.type == "binary_expression" and \
                operator(value) in ("+", "-"):
            left = strip(value.child_by_field_name("left"))
            other = value.child_by_field_name("right")
            if left.type == "identifier" and self.text(left) == name:
                self.param_bumps[name].append((n, 1 if operator(value) == "+" else -1, other))
                return
            other_side = strip(other)
            if operator(value) == "+" and other_side.type == "identifier" and \
                    self.text(other_side) == name:
                self.param_bumps[name].append((n, 1, value.child_by_field_name("left")))
                return
        self.param_bumps[name].append((n, 0, right))

    def _bumped_offset(self, name: str, use: Node) -> Optional[Poly]:
        """The element offset of pointer parameter ``name`` at ``use`` after its bumps: the
        sum over its bumps of the offset times the times it has run (``loop_counts``: once
        for a statement of the outer block before ``use``, once per iteration for one in a
        ``for`` loop, ``A += TILE`` in the tile loop giving ``t * TILE``); None when a bump
        that may run before ``use`` sits in a branch or a loop that cannot be counted, or
        its offset is not a polynomial."""
        return self._bumps_total(self.param_bumps[name], use, Poly(), None)

    def _bumps_total(self, bumps: list, use: Node, base: Poly,
                     after: Optional[Node]) -> Optional[Poly]:
        """``base`` plus each bump of ``bumps`` ((node, sign, offset node or None for 1))
        that ends after ``after`` (a plain definition; None: all), times its count at
        ``use``."""
        total = base
        around = loops_around(use, self.body)
        for n, sign, value in bumps:
            if after is not None and n.end_byte <= after.end_byte:
                continue
            if n.start_byte <= use.start_byte < n.end_byte:
                return None  # the use inside its own bump (p = p + k)
            shared = any(lp.start_byte <= n.start_byte < lp.end_byte for lp in around)
            if n.start_byte > use.start_byte and not shared:
                continue  # after the use, and no loop brings it back
            count = bump_count(n, use, self.body, self.loop_count)
            if count is None:
                return None
            if not count.constant.terms and not count.iterations:
                continue
            if sign == 0:
                return None
            k = Poly.const(1) if value is None else self.poly(value)
            if k is None:
                return None
            moved = count.constant * k
            for loop, per in count.iterations:
                moved = moved + self._iteration_term(loop, per * k)
            total = total + moved if sign > 0 else total - moved
        return total

    def loop_count(self, loop: Node) -> Optional[LoopCount]:
        """The loop's :class:`LoopCount` (cached); its distance symbol is recorded as a
        bounded variable (``facts.bounds``, ``facts.steps``, ``facts.iterations``)."""
        if loop.id not in self._loop_counts:
            if loop.type != "for_statement":
                self._loop_counts[loop.id] = None
                return None
            self._loop_counts[loop.id] = None  # (a header that reads its own bumps)
            c = loop_count(loop, self.text, self.poly, self.parsed)
            self._loop_counts[loop.id] = c
            if c is not None:
                self.facts.bounds.setdefault(c.distance, [c.limit])
                self.facts.iterations[c.distance] = c.var
                if not (c.step.is_const() and c.step.constant == 1):
                    self.facts.steps[c.distance] = ("0", c.step.render())
        return self._loop_counts[loop.id]

    def _iteration_term(self, loop: LoopCount, y: Poly) -> Poly:
        """``t * y`` for iteration ``t`` of ``loop``: ``distance * y / step`` (``distance``
        is ``t * step``), a quotient symbol when ``step`` does not divide ``y``."""
        d = Poly.sym(loop.distance)
        if loop.step.is_const() and loop.step.constant == 1:
            return d * y
        q = divide(y, loop.step)
        if q is not None:
            return d * q
        return self._division("/", d * y, loop.step)

    def accumulated(self, name: str, use: Node, depth: int) -> Optional[Poly]:
        """The value of integer local ``name`` at ``use`` when it is set only by statements
        of the outer block (``int idx = 0;``, ``out_idx = in_idx;``) and moved by bumps
        (``idx += stride``, also inside counted ``for`` loops): the last such definition
        before ``use`` plus the bumps after it, counted (see :meth:`_bumps_total`)."""
        sites = self.def_sites.get(name, [])
        for d, _ in sites:
            stmt = d
            while stmt is not None and stmt.type not in ("declaration", "expression_statement"):
                stmt = stmt.parent
            if stmt is None or stmt.parent is None or stmt.parent.id != self.body.id:
                return None
        before = [(d, v) for d, v in sites if d.end_byte <= use.start_byte]
        if not before:
            return None
        d, v = max(before, key=lambda dv: dv[0].end_byte)
        if v is None:
            return None
        base = self.poly(v, depth + 1)
        if base is None:
            return None
        return self._bumps_total(self.local_bumps[name], use, base, d)

    def _is_bump(self, ident: Node) -> bool:
        """``ident`` is the bumped parameter of its own bump: on its left, or the ``p`` of
        ``p = p + k``."""
        name = self.text(ident)
        if name not in self.param_bumps:
            return False
        node = ident
        while node.parent is not None and (
                node.parent.type == "parenthesized_expression" or
                (node.parent.type == "binary_expression" and
                 operator(node.parent) in ("+", "-"))):
            node = node.parent
        parent = node.parent
        return parent is not None and parent.type == "assignment_expression" and \
            any(parent.id == n.id for n, _, _ in self.param_bumps[name]) and \
            (node == parent.child_by_field_name("left") or node != ident)

    def _declaration(self, decl: Node) -> None:
        if any(c.type == "type_qualifier" and self.text(c) == "__shared__"
               for c in decl.children):
            return
        for d in decl.children_by_field_name("declarator"):
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            target = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            name = declared_name(target, self.parsed) if target is not None else None
            if not name:
                continue
            if value is not None and value.type in ("initializer_list", "argument_list"):
                inner = named_children(value)
                value = inner[0] if len(inner) == 1 else None
            self.defs[name].append(value)
            self.def_sites[name].append((d, value))
            if target is not None and target.type == "pointer_declarator":
                self.pointer_locals.add(name)
                if value is not None:
                    self.alias_decl[value.id] = name

    def _for_step(self, loop: Node) -> None:
        """Records ``(start, step)`` of ``for (int j = START; ...; j += STEP)`` (``++j`` is a
        step of 1) in ``facts.steps``; a variable whose loops disagree gets ("", "")."""
        init = loop.child_by_field_name("initializer")
        update = loop.child_by_field_name("update")
        if init is None or update is None:
            return
        name = start = None
        if init.type == "declaration":
            ds = init.children_by_field_name("declarator")
            if len(ds) == 1 and ds[0].type == "init_declarator":
                target = ds[0].child_by_field_name("declarator")
                name = declared_name(target, self.parsed) if target is not None else None
                start = ds[0].child_by_field_name("value")
        elif init.type == "assignment_expression" and operator(init) == "=":
            left = strip(init.child_by_field_name("left"))
            name = self.text(left) if left.type == "identifier" else None
            start = init.child_by_field_name("right")
        update = strip(update)
        step = None
        if update.type == "update_expression" and "++" in self.text(update):
            arg = strip(update.child_by_field_name("argument"))
            step = "1" if arg.type == "identifier" and self.text(arg) == name else None
        elif update.type == "assignment_expression" and operator(update) == "+=":
            left = strip(update.child_by_field_name("left"))
            right = strip(update.child_by_field_name("right"))
            if left.type == "identifier" and self.text(left) == name and \
                    right.type in ("number_literal", "identifier"):
                step = self.text(right)
        if not name or start is None:
            return
        self.raw_loops.append((loop, name, start, update))
        start = strip(start)
        if start.type in ("number_literal", "identifier", "unary_expression"):
            self.facts.lower.setdefault(name, []).append(self.text(start))
        first = self.text(start) if start.type in ("number_literal", "identifier") else None
        found = (first, step) if first is not None and step is not None else ("", "")
        if self.facts.steps.setdefault(name, found) != found:
            self.facts.steps[name] = ("", "")

    def expanded(self, node: Node, depth: int = 0) -> Optional[Node]:
        """The expression a macro use stands for, re-parsed: a call of a function-like macro
        of the file or its headers (``IN_RANGE(x, 0, cols - 1)`` with ``#define IN_RANGE(x,
        lo, hi) ((x) >= (lo) && (x) <= (hi))``) with its arguments substituted as written, or
        an object-like macro whose text is no integer (``BOUND`` with ``#define BOUND PICK(N,
        m)``), expanded again while the result is one such use (at most 8 times); None when
        ``node`` is neither or the text does not parse."""
        from cudalens.kernel_model.macros import Macro, parse_expression, substitute

        node = strip(node)
        text = None
        if node.type == "identifier":
            name = self.text(node)
            if name in self.object_macros and name not in self.defs and \
                    name not in self.int_params and name not in self.pointers:
                text = self.object_macros[name]
        elif node.type == "call_expression":
            fn = node.child_by_field_name("function")
            name = self.text(fn).strip() if fn is not None else ""
            args = node.child_by_field_name("arguments")
            if name in self.macros and args is not None:
                params, body = self.macros[name]
                try:
                    text = substitute(Macro(name, params, body, 0),
                                      [self.text(a) for a in named_children(args)])
                except ValueError:
                    text = None
        if text is None or depth > 8:
            return None
        try:
            parsed, expr = parse_expression(text)
        except ValueError:
            return None
        self.expansions.append(parsed)
        again = self.expanded(expr, depth + 1)
        return again if again is not None else expr

    def _bounds(self, cond: Node, exit_: bool, scope: Optional[int] = None) -> None:
        cond = strip(cond)
        macro = self.expanded(cond)
        if macro is not None:  # if (IN_RANGE(x, 0, cols - 1)): the checks it expands to
            self._bounds(macro, exit_, scope)
            return
        joiner = "||" if exit_ else "&&"
        if cond.type == "binary_expression" and operator(cond) == joiner:
            self._bounds(cond.child_by_field_name("left"), exit_, scope)
            self._bounds(cond.child_by_field_name("right"), exit_, scope)
            return
        if cond.type != "binary_expression":
            return
        op = operator(cond)
        left, right = strip(cond.child_by_field_name("left")), \
            strip(cond.child_by_field_name("right"))
        wanted = _UPPER_EXIT if exit_ else _UPPER_GUARD
        lower = _LOWER_EXIT if exit_ else _LOWER_GUARD
        for var, bound, o in ((left, right, op), (right, left, _FLIP.get(op, ""))):
            if o in wanted and scope is not None and var.type == "field_expression" and \
                    self.text(var).replace(" ", "").startswith("threadIdx."):
                # if (threadIdx.x < BINS) out[blockIdx.x * BINS + threadIdx.x] = ...
                self.raw_bounds.append((self.text(var).replace(" ", ""), bound, wanted[o],
                                        scope))
            elif o in wanted and var.type == "binary_expression" and operator(var) in "+*":
                # idx + 2 < N, and idx * 8 < N (eight elements a thread from idx * 8)
                self.raw_sum_bounds.append((var, bound, wanted[o], scope))
            elif o in wanted and var.type == "identifier":
                name = self.text(var)
                if name not in self.int_params and name not in self.pointers:
                    self.raw_bounds.append((name, bound, wanted[o], scope))
            elif o in lower and var.type == "identifier" and \
                    bound.type in ("number_literal", "identifier", "unary_expression"):
                text = self.text(bound) + (" + 1" if lower[o] else "")
                self.facts.lower.setdefault(self.text(var), []).append(text)

    # -- expressions -> polynomials --------------------------------------------------------

    def substitutable(self, name: str) -> bool:
        d = self.defs.get(name, [])
        return len(d) == 1 and d[0] is not None and self.assigned.get(name, 0) == 0

    def poly(self, node: Optional[Node], depth: int = 0) -> Optional[Poly]:
        """``node`` as a polynomial, or None when it is not one (division, calls, loads...)."""
        if node is None or depth > _MAX_DEPTH:
            return None
        node = strip(node)
        t = node.type
        if t == "number_literal":
            v = int_literal(self.text(node))
            return None if v is None else Poly.const(v)
        if t == "identifier":
            name = self.text(node)
            if name in self.bounded and self._changed_since_check(name, node):
                # if (i < n) { i = i * 2; out[i] ... }: the check bounds the old value only
                value = self.reaching(name, node)
                if value is not None:
                    return self.poly(value, depth + 1)
                return self._changed_in_place(name, node, depth)
            if name in self.bounded or name in self.int_params:
                return Poly.sym(name)
            if name in self.object_macros and name not in self.defs:
                macro = self.expanded(node)  # i < BOUND with #define BOUND PICK(N, m)
                inner = self.poly(macro, depth + 1) if macro is not None else None
                if inner is not None:
                    return inner
                return Poly.sym(name)
            if name not in self.pointer_locals and self.substitutable(name):
                inner = self.poly(self.defs[name][0], depth + 1)
                if inner is None:
                    loaded = self._loaded_from(self.defs[name][0])
                    if loaded is not None:
                        self.facts.loads[name] = loaded
                        return Poly.sym(name)
                return inner
            if name in self.local_bumps and name not in self.pointer_locals:
                acc = self.accumulated(name, node, depth)
                if acc is not None:
                    return acc
            if name not in self.pointer_locals:
                value = self.reaching(name, node)
                if value is not None:
                    inner = self.poly(value, depth + 1)
                    if inner is not None:
                        return inner
            return Poly.sym(name)
        if t == "field_expression":
            name = self.text(node).replace(" ", "")
            arg = strip(node.child_by_field_name("argument"))
            if arg.type == "identifier" and "->" not in name and \
                    self.substitutable(self.text(arg)):
                loaded = self._vector_loaded_from(self.defs[self.text(arg)][0])
                if loaded is not None:  # int4 r = INT4(a[i]); y[r.x]: r.x is read from a
                    self.facts.loads[name] = loaded
            return Poly.sym(name)
        if t == "qualified_identifier":
            v = self.qualified.get("".join(self.text(node).split()))
            return None if v is None else Poly.const(v)
        if t == "call_expression":
            expanded = self._macro_poly(node, depth)
            if expanded is not None:
                return expanded
        if t in ("subscript_expression", "call_expression"):
            # an element of an integer pointer parameter used inline (``p[i * V + t[i]]``):
            # a symbol loaded from it, as ``int ix = t[i];`` would give; a whole index
            # (``x[col[j]]``) stays a direct index
            up = node.parent
            while up is not None and up.type in ("parenthesized_expression", "cast_expression"):
                up = up.parent
            loaded = self._loaded_from(node)
            if loaded is not None and loaded in self.int_pointers and up is not None and \
                    up.type == "binary_expression":
                name = "".join(self.text(node).split())
                self.facts.loads[name] = loaded
                return Poly.sym(name)
            return None
        if t == "unary_expression":
            inner = self.poly(node.child_by_field_name("argument"), depth + 1)
            op = operator(node)
            if inner is None or op not in ("-", "+"):
                return None
            return -inner if op == "-" else inner
        if t == "binary_expression":
            op = operator(node)
            a = self.poly(node.child_by_field_name("left"), depth + 1)
            b = self.poly(node.child_by_field_name("right"), depth + 1)
            if a is None or b is None:
                return None
            if op == "+":
                return a + b
            if op == "-":
                return a - b
            if op == "*":
                return a * b
            if op == "<<" and b.is_const() and 0 <= b.constant < 63:
                return a * Poly.const(1 << b.constant)
            if op == ">>" and b.is_const() and 0 <= b.constant < 63:
                return self._division("/", a, Poly.const(1 << b.constant))
            if op in ("/", "%") and not (b.is_const() and b.constant <= 0):
                return self._division(op, a, b)
        return None

    def _macro_poly(self, call: Node, depth: int) -> Optional[Poly]:
        """A call of a function-like macro of the file or its headers whose replacement is
        integer arithmetic of its parameters (``UMAD(blockIdx.x, blockDim.x, threadIdx.x)``
        with ``#define UMAD(a, b, c) (UMUL((a), (b)) + (c))``) as a polynomial of its
        arguments; ``__umul24``/``__mul24`` multiply. None otherwise."""
        fn = call.child_by_field_name("function")
        name = self.text(fn).strip() if fn is not None else ""
        if name not in self.macros:
            return None
        args = call.child_by_field_name("arguments")
        polys = [self.poly(a, depth + 1) for a in (named_children(args) if args else [])]
        if any(p is None for p in polys):
            return None
        return _expand_macro(name, polys, self.macros, 0)

    def _changed_since_check(self, name: str, use: Node) -> bool:
        """The last bounds check of local ``name`` (``raw_bounds``) before ``use`` has a
        definition, compound assignment or ``++``/``--`` of ``name`` after it that ends before
        ``use`` (not a ``for``'s own initializer or update): the value ``use`` reads is not the
        one checked. Textual order, which is execution order in the straight-line code this
        is asked about."""
        checks = [b.start_byte for var, b, _, _ in self.raw_bounds
                  if var == name and b.start_byte < use.start_byte]
        if not checks:
            return False
        changes = [n for n, _ in self.def_sites.get(name, [])] + \
            [n for n, _, _ in self.local_bumps.get(name, [])]
        return any(max(checks) < n.end_byte <= use.start_byte and not _in_for_header(n)
                   for n in changes)

    def _changed_in_place(self, name: str, use: Node, depth: int) -> Optional[Poly]:
        """The value of ``name`` at ``use`` when its last check is followed only by compound
        assignments in straight-line code around ``use`` (``if (i < n) { i *= 2; i += 1;
        out[i] ... }``): the checked value (the symbol, bounded by the check) with each
        ``+=``, ``-=``, ``*=`` (by polynomials) or ``<<=`` (by a constant) applied in order;
        None when another change intervenes."""
        last = max(b.start_byte for var, b, _, _ in self.raw_bounds
                   if var == name and b.start_byte < use.start_byte)
        if any(last < n.end_byte <= use.start_byte for n, _ in self.def_sites.get(name, [])):
            return None
        value = Poly.sym(name)
        for n, _, right in sorted(self.local_bumps.get(name, []), key=lambda b: b[0].start_byte):
            if not last < n.end_byte <= use.start_byte or _in_for_header(n):
                continue
            stmt = n
            while stmt.parent is not None and stmt.parent.type != "compound_statement":
                stmt = stmt.parent
            block = stmt.parent
            if block is None or not block.start_byte <= use.start_byte < block.end_byte or \
                    any(a.type in ("for_statement", "while_statement", "do_statement")
                        and a.start_byte > block.start_byte for a in _ancestors_to(use, block)):
                return None
            r = self.poly(right, depth + 1) if right is not None else Poly.const(1)
            op = operator(n) if n.type == "assignment_expression" else \
                ("+=" if "++" in self.text(n) else "-=")
            if r is None:
                return None
            if op == "+=":
                value = value + r
            elif op == "-=":
                value = value - r
            elif op == "*=":
                value = value * r
            elif op == "<<=" and r.is_const() and 0 <= r.constant < 31:
                value = value * Poly.const(1 << r.constant)
            else:
                return None
        return value

    def reaching(self, name: str, use: Node) -> Optional[Node]:
        """The value of the one definition of local ``name`` that reaches ``use`` in
        straight-line code, or None: the last definition ending before ``use`` whose
        statement sits in a block enclosing ``use``, with no definition of ``name`` in a loop
        around ``use`` (the loop would carry a later one back) and no compound assignment or
        ``++``/``--`` of it anywhere (``int rest = i % (N * d); ... rest = rest % d;`` gives
        each use of ``rest`` its own value)."""
        if name in self.updated:
            return None
        sites = self.def_sites.get(name, [])
        before = [(n, v) for n, v in sites if n.end_byte <= use.start_byte]
        if not before:
            return None
        node, value = max(before, key=lambda nv: nv[0].end_byte)
        if value is None:
            return None
        stmt = node
        while stmt.parent is not None and stmt.parent.type != "compound_statement":
            stmt = stmt.parent
        block = stmt.parent
        if block is None or not (block.start_byte <= use.start_byte < block.end_byte):
            return None
        loops = ("for_statement", "while_statement", "do_statement")
        anc = use.parent
        while anc is not None and anc != block:
            if anc.type in loops:
                if any(anc.start_byte <= n.start_byte < anc.end_byte for n, _ in sites):
                    return None
            anc = anc.parent
        return value

    def _division(self, op: str, a: Poly, b: Poly) -> Poly:
        if b.is_const() and b.constant == 1:
            return a if op == "/" else Poly()
        name = f"({a.render()}){op}({b.render()})"
        self.facts.divisions.setdefault(name, (op, a, b))
        return Poly.sym(name)

    def _loaded_from(self, node: Optional[Node]) -> Optional[str]:
        """The pointer parameter ``node`` (up to casts and parentheses) reads one element of:
        ``idx[i]``, ``__ldg(&idx[i])``, ``__ldg(idx + i)``; else None."""
        if node is None:
            return None
        node = strip(node)
        if node.type == "subscript_expression":
            base = self.pointer_base(node.child_by_field_name("argument"))
            return base[0] if base is not None else None
        if node.type == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            inner = named_children(args) if args is not None else []
            if fn is not None and self.text(fn) in READ_ONLY_LOADS and len(inner) == 1:
                base = self.pointer_base(inner[0])
                return base[0] if base is not None else None
        return None

    def _vector_loaded_from(self, node: Optional[Node]) -> Optional[str]:
        """The pointer parameter a vector local is loaded from in one piece:
        ``reinterpret_cast<const int4*>(&a[i])[0]``, ``*reinterpret_cast<int4*>(a + i)`` or a
        function-like macro whose replacement reinterprets its one argument
        (``INT4(a[i])`` with ``#define INT4(v) (reinterpret_cast<const int4*>(&(v))[0])``);
        else None."""
        if node is None:
            return None
        node = strip(node)
        if node.type == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            inner = named_children(args) if args is not None else []
            macro = self.macros.get(self.text(fn)) if fn is not None else None
            if macro is not None and len(inner) == 1 and "reinterpret_cast" in macro[1]:
                return self._loaded_from(inner[0]) or self._cast_base(inner[0])
            return None
        if node.type == "subscript_expression":
            return self._cast_base(strip(node.child_by_field_name("argument")))
        if node.type == "pointer_expression" and self.text(node).startswith("*"):
            return self._cast_base(strip(node.child_by_field_name("argument")))
        return None

    def _cast_base(self, node: Node) -> Optional[str]:
        """The pointer parameter under ``reinterpret_cast<T*>(p + i)`` (or ``&p[i]``), or
        under ``p + i`` itself; else None."""
        node = strip(node)
        if node.type == "call_expression":
            fn = node.child_by_field_name("function")
            name = fn.child_by_field_name("name") if fn is not None and \
                fn.type == "template_function" else None
            args = node.child_by_field_name("arguments")
            inner = named_children(args) if args is not None else []
            if name is None or self.text(name) != "reinterpret_cast" or len(inner) != 1:
                return None
            node = strip(inner[0])
        base = self.pointer_base(node)
        return base[0] if base is not None else None

    # -- pointers through locals -----------------------------------------------------------

    def pointer_base(self, node: Node, depth: int = 0) -> Optional[tuple[str, Optional[Poly]]]:
        """(parameter, element offset) of a pointer-valued expression: ``x`` -> (x, 0),
        ``x + r * n`` -> (x, r * n), ``&x[i]`` -> (x, i), a local alias -> its definition's.
        The offset is None when unknown (e.g. an alias that is reassigned)."""
        if depth > _MAX_DEPTH:
            return None
        node = strip(node)
        t = node.type
        if t == "identifier":
            name = self.text(node)
            if name in self.pointers:
                if name in self.param_bumps:
                    return name, self._bumped_offset(name, node)
                return name, Poly()
            if name in self.pointer_locals:
                if not self.substitutable(name) and name not in self.updated:
                    value = self.reaching(name, node)
                    base = self.pointer_base(value, depth + 1) if value is not None else None
                    if base is not None:
                        return base
                for value in self.defs.get(name, []):
                    if value is None:
                        continue
                    base = self.pointer_base(value, depth + 1)
                    if base is not None:
                        exact = self.substitutable(name)
                        return base[0], base[1] if exact else None
            return None
        if t == "binary_expression" and operator(node) in ("+", "-"):
            op = operator(node)
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            pairs = [(left, right)] + ([(right, left)] if op == "+" else [])  # k - p is no pointer
            for ptr, off in pairs:
                base = self.pointer_base(ptr, depth + 1)
                if base is not None:
                    k = self.poly(off)
                    if base[1] is None or k is None:
                        return base[0], None
                    return base[0], base[1] + k if op == "+" else base[1] - k
            return None
        if t == "pointer_expression" and operator(node) == "&":
            target = strip(node.child_by_field_name("argument"))
            if target.type == "subscript_expression":
                return self.subscript(target, depth + 1)
        if t == "call_expression":
            inner = self._const_cast_argument(node)
            if inner is not None:
                return self.pointer_base(inner, depth + 1)
        return None

    def _reinterpreted(self, node: Node) -> Optional[tuple[Node, int, int]]:
        """(the call, lanes, bytes) when ``node``, a pointer into a parameter, is the one
        argument of ``reinterpret_cast<T*>(node)`` and ``T`` is ``lanes`` of the parameter's
        elements, ``bytes`` in all (``reinterpret_cast<const int4*>(a + i)`` of a bf16 ``a``:
        8 lanes, 16 bytes; a ``struct alignas(16) P { __nv_bfloat16 v[8]; }`` likewise); None
        otherwise (the use stays an escape)."""
        args = node.parent
        call = args.parent if args is not None and args.type == "argument_list" else None
        if call is None or call.type != "call_expression" or len(named_children(args)) != 1:
            return None
        fn = call.child_by_field_name("function")
        name = fn.child_by_field_name("name") if fn is not None and \
            fn.type == "template_function" else None
        targs = fn.child_by_field_name("arguments") if name is not None else None
        if name is None or self.text(name) != "reinterpret_cast" or targs is None:
            return None
        target = self.text(targs).strip()[1:-1].strip()
        if not target.endswith("*") or target.count("*") != 1:
            return None
        base = self.pointer_base(node)
        param = next((p for p in self.kernel_params if p.name == base[0]), None) \
            if base is not None else None
        if param is None:
            return None
        elem = _type_bytes(param.type.replace("*", " "), self.context or self.parsed.text)
        size = _type_bytes(target[:-1], self.context or self.parsed.text)
        if elem is None or size is None or size % elem or size == elem:
            return None
        return call, size // elem, size

    def _recast_use(self, node: Node, call: Node, lanes: int, size: int) -> None:
        """The access ``reinterpret_cast<T*>(node)[k]`` or ``*reinterpret_cast<T*>(node)``
        makes: ``size`` bytes from element ``offset + k * lanes`` of the parameter, with the
        kind of use the vector gets; anything else done with the cast pointer is an escape."""
        base = self.pointer_base(node)
        assert base is not None
        cur = call
        while cur.parent is not None and cur.parent.type == "parenthesized_expression":
            cur = cur.parent
        parent = cur.parent
        offset: Optional[Poly] = None
        if parent is not None and parent.type == "subscript_expression" and \
                parent.child_by_field_name("argument") == cur:
            indices = parent.child_by_field_name("indices")
            inner = named_children(indices) if indices is not None else []
            k = self.poly(inner[0]) if len(inner) == 1 else None
            if base[1] is not None and k is not None:
                offset = base[1] + k * Poly.const(lanes)
        elif parent is not None and parent.type == "pointer_expression" and \
                operator(parent) == "*":
            offset = base[1]
        else:
            shown = parent.parent if parent is not None and parent.type == "argument_list" \
                and parent.parent is not None else (parent or call)
            self._add(base[0], "escape", None, shown)
            return
        self._add(base[0], self._pointee_kind(parent), offset, parent, width=size)

    def _const_cast_argument(self, call: Node) -> Optional[Node]:
        """The argument of ``const_cast<T*>(arg)``, else None. A const_cast changes only
        qualifiers, so elements keep their size and the pointer its parameter."""
        fn = call.child_by_field_name("function")
        if fn is None or fn.type != "template_function":
            return None
        name = fn.child_by_field_name("name")
        if name is None or self.text(name) != "const_cast":
            return None
        args = call.child_by_field_name("arguments")
        inner = named_children(args) if args is not None else []
        return inner[0] if len(inner) == 1 else None

    def _through_const_cast(self, node: Node) -> Optional[Node]:
        """The ``const_cast<T*>(node)`` call whose argument ``node`` is, else None."""
        args = node.parent
        call = args.parent if args is not None and args.type == "argument_list" else None
        if call is not None and call.type == "call_expression" and \
                self._const_cast_argument(call) == node:
            return call
        return None

    def subscript(self, node: Node, depth: int = 0) -> Optional[tuple[str, Optional[Poly]]]:
        base = self.pointer_base(node.child_by_field_name("argument"), depth)
        if base is None:
            return None
        indices = node.child_by_field_name("indices")
        inner = named_children(indices) if indices is not None else []
        k = self.poly(inner[0]) if len(inner) == 1 else None
        if base[1] is None or k is None:
            return base[0], None
        return base[0], base[1] + k

    # -- pass 2: accesses ------------------------------------------------------------------

    def accesses(self) -> None:
        names = self.pointers | self.pointer_locals
        for n in walk(self.body):
            if n.type != "identifier" or self.text(n) not in names or _is_declarator(n):
                continue
            if self.text(n) in self.pointer_locals and self.pointer_base(n) is None:
                continue  # a local pointer not derived from a parameter (shared memory, ...)
            if self._alias_definition(n) or self._reassigned_alias(n) or self._is_bump(n):
                continue
            self._use(n)

    def _reassigned_alias(self, ident: Node) -> bool:
        """``ident`` is the local pointer assigned in ``x = out + row * C``."""
        parent = ident.parent
        return parent is not None and parent.type == "assignment_expression" and \
            operator(parent) == "=" and parent.child_by_field_name("left") == ident and \
            self.text(ident) in self.pointer_locals

    def _alias_definition(self, ident: Node) -> bool:
        """``ident`` is the base pointer in the initializer of a local alias
        (``float* row = y + r * n``, ``const float* p = &x[i]``)."""
        node = ident
        while node.id not in self.alias_decl:
            parent = node.parent
            if parent is None:
                return False
            t = parent.type
            if t == "subscript_expression" and parent.child_by_field_name("argument") == node:
                pass
            elif t == "pointer_expression" and operator(parent) == "&":
                pass
            elif t == "binary_expression" and operator(parent) in ("+", "-"):
                pass
            elif t == "argument_list" and self._through_const_cast(node) is not None:
                parent = parent.parent
            elif t not in ("parenthesized_expression", "cast_expression"):
                return False
            node = parent
        return True

    def _use(self, ident: Node) -> None:
        atomic = self._atomic_call(ident)
        if atomic is not None:
            call, arg0 = atomic
            base = self.pointer_base(arg0)
            if base is not None:
                kind = "update" if call in ATOMIC_RMW else "write"
                self._add(base[0], kind, base[1], arg0, arg0, atomic=call)
                return
        # climb pointer arithmetic (x + k, k + x, x - k), parentheses and casts
        node = ident
        while node.parent is not None:
            parent = node.parent
            cast = self._through_const_cast(node)
            if cast is not None:
                node = cast
                continue
            if parent.type in ("parenthesized_expression", "cast_expression") or (
                    parent.type == "binary_expression" and (
                        operator(parent) == "+" or (operator(parent) == "-" and
                                               parent.child_by_field_name("left") == node))):
                node = parent
                continue
            break
        parent = node.parent
        recast = self._reinterpreted(node)
        if recast is not None:
            self._recast_use(node, *recast)
            return
        if parent is not None and parent.type == "subscript_expression" \
                and parent.child_by_field_name("argument") == node:
            base = self.subscript(parent)
            indices = parent.child_by_field_name("indices")
            inner = named_children(indices) if indices is not None else []
            access, index_node = parent, (inner[0] if len(inner) == 1 else None)
        elif parent is not None and parent.type == "pointer_expression" and operator(parent) == "*":
            base = self.pointer_base(node)
            access, index_node = parent, None
        else:
            base = self.pointer_base(node)
            if base is not None:
                helper = self._helper_access(node)
                if self._read_only_load(node):
                    self._add(base[0], "read", base[1], node)
                elif helper is not None:
                    call = node.parent.parent
                    self._add(base[0], helper[0], base[1], call, width=helper[1])
                else:
                    shown = parent if parent is not None else node
                    if shown.type == "argument_list" and shown.parent is not None:
                        shown = shown.parent
                    self._add(base[0], "escape", None, shown)
            return
        if base is None:
            return
        kind = self._pointee_kind(access)
        self._add(base[0], kind, base[1], access, index_node)
        args = access.parent
        while args is not None and args.type == "parenthesized_expression":
            args = args.parent
        if kind in ("write", "update") and args is not None and args.type == "argument_list" \
                and args.parent is not None and args.parent.type == "call_expression" and \
                self._macro_argument_kind(access) is None:
            fn = args.parent.child_by_field_name("function")
            self.facts.by_reference.setdefault(base[0], (
                self.text(fn) if fn is not None else "", access.start_point[0] + 1))

    def _pointee_kind(self, access: Node) -> str:
        """What happens to the element ``access`` reaches: read, write, update or escape."""
        cur = access
        while cur.parent is not None and (
                cur.parent.type == "parenthesized_expression" or
                (cur.parent.type == "field_expression" and
                 cur.parent.child_by_field_name("argument") == cur)):
            cur = cur.parent
        p = cur.parent
        if p is None:
            return "read"
        if p.type == "assignment_expression" and p.child_by_field_name("left") == cur:
            return "write" if operator(p) == "=" else "update"
        if p.type == "update_expression":
            return "update"
        if p.type == "pointer_expression" and operator(p) == "&":
            return "read" if self._read_only_load(p) else "escape"
        if p.type == "argument_list":
            return self._macro_argument_kind(cur) or \
                reference_argument_kind(cur, self.parsed) or "read"
        return "read"

    def _macro_argument_kind(self, arg: Node) -> Optional[str]:
        """What a function-like macro does with the element ``arg`` passed to it, judged from
        its replacement text as the preprocessor would expand it: the parameter's address
        taken (``#define F4(v) (reinterpret_cast<float4 *>(&(v))[0])``) is an ``escape``, as
        ``&x[i]`` written out is, unless a read-only load takes it (``__ldg(&(v))``); the
        parameter assigned or incremented in the replacement (``#define INC(v) ((v)++)``) an
        ``update`` or ``write``; otherwise the element is what the call yields, so the call's
        own use counts (``AT(y[i]) = v`` with ``#define AT(v) (v)`` writes y). None when
        ``arg`` is not an argument of a macro the file or its headers define on one line."""
        args = arg.parent
        call = args.parent if args is not None else None
        if call is None or call.type != "call_expression":
            return None
        fn = call.child_by_field_name("function")
        name = self.text(fn).strip() if fn is not None else ""
        if name not in self.macros:
            return None
        params, text = self.macros[name]
        position = next((i for i, a in enumerate(named_children(args)) if a == arg), None)
        if position is None or position >= len(params):
            return "escape"
        rank = {"read": 0, "write": 1, "update": 2, "escape": 3}
        kind = "read"
        loads = "|".join(sorted(READ_ONLY_LOADS))
        for u in re.finditer(rf"(?<![\w.]){re.escape(params[position])}\b", text):
            before, after = text[:u.start()], text[u.end():]
            if re.search(r"&\s*[(\s]*$", before):
                found = "read" if re.search(rf"\b(?:{loads})\s*\(\s*&\s*[(\s]*$", before) \
                    else "escape"
            elif re.search(r"(?:\+\+|--)\s*[(\s]*$", before) or \
                    re.match(r"[)\s]*(?:\+\+|--|[-+*/%&|^]=|<<=|>>=)", after):
                found = "update"
            elif re.match(r"[)\s]*=(?!=)", after):
                found = "write"
            else:
                found = self._pointee_kind(call)
            kind = max(kind, found, key=rank.__getitem__)
        return kind

    def _read_only_load(self, node: Node) -> bool:
        """``node`` is (up to parentheses) the argument of ``__ldg(...)`` or a sibling load."""
        while node.parent is not None and node.parent.type == "parenthesized_expression":
            node = node.parent
        args = node.parent
        if args is None or args.type != "argument_list" or args.parent is None \
                or args.parent.type != "call_expression":
            return False
        fn = args.parent.child_by_field_name("function")
        return fn is not None and self.text(fn) in READ_ONLY_LOADS

    def _helper_access(self, node: Node) -> Optional[tuple[str, int]]:
        """(kind, bytes) when ``node`` is an argument of a call to a device helper that
        reads or writes through it: from the helper's body when the file or its headers
        define it (a store through the parameter, ``*p = v`` / ``p[i] = v`` / ``__stcs(p, v)``,
        is a write, anything else a read), else from its name (``load...`` reads,
        ``store...`` writes); bytes from a cast to a vector type in that body (``int4``,
        ``float4``: 16) or a ``128`` in the name (16), else 0 (one element)."""
        while node.parent is not None and node.parent.type == "parenthesized_expression":
            node = node.parent
        args = node.parent
        if args is None or args.type != "argument_list" or args.parent is None or \
                args.parent.type != "call_expression":
            return None
        fn = args.parent.child_by_field_name("function")
        if fn is None:
            return None
        name = self.text(fn).split("<")[0].strip()
        if not re.fullmatch(r"[A-Za-z_]\w*", name) or name in ATOMIC_RMW | ATOMIC_WRITE:
            return None
        position = next((i for i, a in enumerate(named_children(args)) if a == node), None)
        if position is None:
            return None
        found = _helper_body(self.context, name)
        kind = ""
        width = 16 if "128" in name else 0
        if found is not None:
            params, body = found
            if position >= len(params):
                return None
            p = params[position]
            uses = list(re.finditer(rf"(?<![\w.]){re.escape(p)}\b", body))
            if not uses:
                return None
            for u in uses:  # only the element it points to: *p, p[0], a cast of p
                after = body[u.end():u.end() + 40]
                if re.match(r"\s*\[", after) and not re.match(r"\s*\[\s*0\s*\]", after):
                    return None
                if re.match(r"\s*(?:[-+](?![=>])|\+=|-=|=(?!=))", after):
                    return None
            vector = re.search(rf"(?:int|uint|float)(4|2)\s*\*\s*>\s*\(\s*{re.escape(p)}\b", body)
            if vector:
                width = 16 if vector.group(1) == "4" else 8
            store = (rf"\*\s*(?:\(\s*)?(?:reinterpret_cast\s*<[^<>]*>\s*)?\(?\s*{re.escape(p)}\b"
                     rf"[^;=]*=(?!=)|\b{re.escape(p)}\s*\[[^\]]*\]\s*=(?!=)"
                     rf"|__st\w*\s*\(\s*(?:reinterpret_cast\s*<[^<>]*>\s*)?\(?\s*{re.escape(p)}\b")
            kind = "write" if re.search(store, body) else "read"
        elif not self.context:
            return None  # (validation: no guesses by name about what a helper does)
        elif name.lower().startswith("load"):
            kind = "read"
        elif name.lower().startswith("store"):
            kind = "write"
        return (kind, width) if kind else None

    def _atomic_call(self, ident: Node) -> Optional[tuple[str, Node]]:
        """(function, first argument) when ``ident`` is inside the first argument of an
        atomic function call."""
        node = ident
        while node.parent is not None:
            parent = node.parent
            if parent.type == "argument_list" and parent.parent is not None \
                    and parent.parent.type == "call_expression":
                fn = parent.parent.child_by_field_name("function")
                name = self.text(fn).split("<")[0].strip() if fn is not None else ""
                args = named_children(parent)
                if name in ATOMIC_RMW | ATOMIC_WRITE and args and args[0] == node:
                    return name, node
                return None
            if parent.type in ("subscript_argument_list", "compound_statement"):
                return None
            node = parent
        return None

    def _add(self, param: str, kind: str, index: Optional[Poly], node: Node,
             index_node: Optional[Node] = None, atomic: str = "", width: int = 0) -> None:
        data: set[str] = set()
        direct = ""
        if index_node is not None:
            for m in walk(index_node):
                if m.type == "subscript_expression":
                    base = self.pointer_base(m.child_by_field_name("argument"))
                    if base is not None and base[0] != param:
                        data.add(base[0])
            stripped = strip(index_node)
            if stripped.type == "call_expression":  # __ldg(&idx[j]), __ldg(idx + j)
                fn = stripped.child_by_field_name("function")
                args = stripped.child_by_field_name("arguments")
                inner = named_children(args) if args is not None else []
                if fn is not None and self.text(fn) in READ_ONLY_LOADS and len(inner) == 1:
                    arg = strip(inner[0])
                    base = self.pointer_base(arg)  # &idx[j] or idx + j: one element of idx
                    if base is not None and base[0] != param:
                        direct = base[0]
            elif stripped.type == "pointer_expression" and operator(stripped) == "&":
                stripped = strip(stripped.child_by_field_name("argument"))
                inner = stripped.child_by_field_name("indices") \
                    if stripped.type == "subscript_expression" else None
                parts = named_children(inner) if inner is not None else []
                stripped = strip(parts[0]) if len(parts) == 1 else stripped
            if stripped.type == "subscript_expression":
                base = self.pointer_base(stripped.child_by_field_name("argument"))
                if base is not None and base[0] != param:
                    direct = base[0]
        order = node.start_byte
        if kind == "write":
            at = node
            while at.parent is not None and at.type not in ("assignment_expression",
                                                            "call_expression"):
                at = at.parent
            order = at.end_byte
        self.facts.accesses.append(Access(
            param=param, kind=kind, index=index, text=self.text(node),
            line=node.start_point[0] + 1, data_indices=tuple(sorted(data)),
            direct_index=direct, atomic=atomic, order=order, branches=self._branches(node),
            loops=self._loops(node), width=width))

    def _loops(self, node: Node) -> tuple[tuple[str, str], ...]:
        """(variable, header) of each ``for`` whose body holds ``node``, innermost first."""
        out = []
        cur = node
        while cur.parent is not None and cur.id != self.body.id:
            parent = cur.parent
            if parent.type == "for_statement" and cur == parent.child_by_field_name("body"):
                out.append(self._header(parent))
            cur = parent
        return tuple(out)

    def _header(self, loop: Node) -> tuple[str, str]:
        """(variable, header text) of a ``for``, as ``Access.loops`` lists them."""
        parts = [loop.child_by_field_name(f) for f in ("initializer", "condition", "update")]
        texts = ["".join(self.text(x).split()) if x is not None else "" for x in parts]
        init = parts[0]
        var = ""
        if init is not None:
            m = re.match(r"(?:[\w:<>]+\s+)*?([A-Za-z_]\w*)\s*=", self.text(init))
            var = m.group(1) if m else ""
        if var and texts[2] in (f"++{var}", f"{var}+=1"):
            texts[2] = f"{var}++"  # ++c, c += 1 and c++ step alike
        return var, ";".join(texts)

    def _branches(self, node: Node) -> frozenset:
        """The ids of the conditional branches around ``node`` inside the body: each
        ``if``'s consequence or alternative, ``?:``'s arms, a ``switch`` case, and the right
        side of ``&&``/``||`` (conditions themselves run unconditionally)."""
        out = set()
        cur = node
        while cur.parent is not None and cur.id != self.body.id:
            parent = cur.parent
            t = parent.type
            if t in ("if_statement", "conditional_expression") and \
                    cur != parent.child_by_field_name("condition"):
                out.add(cur.id)
            elif t == "case_statement":
                out.add(parent.id)
            elif t == "binary_expression" and operator(parent) in ("&&", "||") and \
                    cur == parent.child_by_field_name("right"):
                out.add(cur.id)
            cur = parent
        return frozenset(out)

    # -- bounds and axes -------------------------------------------------------------------

    def finish_bounds(self) -> None:
        self.bounded = dict.fromkeys(v for v, _, _, _ in self.raw_bounds)
        self._sum_bounds()
        for loop, name, start, update in self.raw_loops:
            self.facts.loop_ranges[self._header(loop)] = (
                self.poly(start), self._loop_bound(loop, name), self._loop_step(update, name))
        for var, node, plus, scope in self.raw_bounds:
            p = self.poly(node)
            if p is None:
                # j < min(start + len, n), directly or through a local: each operand bounds j
                operands = self._min_operands(node)
                for q in sorted(operands, key=lambda q: _symbol_of(q) is None):
                    self.facts.bounds.setdefault(var, []).append(q + Poly.const(plus))
                if operands:
                    continue
                loaded = self._loaded_from(node)
                if loaded is not None:
                    self.facts.csr.setdefault(var, loaded)
                continue
            local = _symbol_of(p)
            if local is not None and local in self.facts.loads and \
                    self._starts_from(var, self.facts.loads[local]):
                # int end = row_ptr[r + 1]; for (j = start; j < end; ...) with start loaded
                # from row_ptr too: CSR row pointers read through locals
                self.facts.csr.setdefault(var, self.facts.loads[local])
                continue
            self.facts.bounds.setdefault(var, []).append(p + Poly.const(plus))
            if scope is not None:
                self.facts.scoped.setdefault(var, []).append((scope, p + Poly.const(plus)))
        for var in self.bounded:
            value = self.defs[var][0] if self.substitutable(var) else None
            loaded = self._loaded_from(value) if value is not None else None
            if loaded is not None:  # int id = ids[t]; if (id < V): a checked loaded value
                self.facts.loads.setdefault(var, loaded)
            axis = self._axis(var)
            if axis is not None:
                self.facts.axes[var] = axis
                value = next((v for v in self.defs.get(var, []) if v is not None), None)
                p = self.poly(value) if value is not None else None
                if p is not None:
                    self.facts.values[var] = p

    def _loop_bound(self, loop: Node, name: str) -> Optional[Poly]:
        """The exclusive bound of ``for (...; name < B; ...)`` (``<=``: B + 1), else None."""
        cond = loop.child_by_field_name("condition")
        cond = strip(cond) if cond is not None else None
        if cond is None or cond.type != "binary_expression":
            return None
        left, right = strip(cond.child_by_field_name("left")), \
            strip(cond.child_by_field_name("right"))
        op = operator(cond)
        for var, bound, o in ((left, right, op), (right, left, _FLIP.get(op, ""))):
            if o in _UPPER_GUARD and var.type == "identifier" and self.text(var) == name:
                b = self.poly(bound)
                return b + Poly.const(_UPPER_GUARD[o]) if b is not None else None
        return None

    def _loop_step(self, update: Node, name: str) -> Optional[Poly]:
        """What ``name`` adds each iteration: 1 for ``++``, S for ``+= S``, else None."""
        update = strip(update)
        if update.type == "update_expression" and "++" in self.text(update):
            arg = strip(update.child_by_field_name("argument"))
            return Poly.const(1) if self.text(arg) == name else None
        if update.type == "assignment_expression" and operator(update) == "+=" and \
                self.text(strip(update.child_by_field_name("left"))) == name:
            return self.poly(update.child_by_field_name("right"))
        return None

    def _sum_bounds(self) -> None:
        """The checks of a sum against a bound (``idx + k < N``): each goes to
        ``facts.expr_guards``, and bounds the sum's thread index (a local set from blockIdx
        that appears alone in it, coefficient 1) by the bound less the rest of the sum
        (``idx < N - k``; a loop variable's term drops out of its upper bound at 0)."""
        for node, bound, plus, scope in self.raw_sum_bounds:
            e, b = self.poly(node), self.poly(bound)
            if e is None or b is None:
                continue
            b = b + Poly.const(plus)
            self.facts.expr_guards.append((e, b, scope))
            if operator(strip(node)) == "*":
                continue  # idx * 8 < N: only the accesses under it (expr_guards)
            leaves: list[Node] = []
            stack = [node]
            while stack:
                cur = strip(stack.pop())
                if cur.type == "binary_expression" and operator(cur) == "+":
                    stack += [cur.child_by_field_name("right"), cur.child_by_field_name("left")]
                else:
                    leaves.append(cur)
            for leaf in leaves:
                var = self.text(leaf)
                if leaf.type != "identifier" or var in self.int_params or \
                        var in self.pointers or self._axis(var) is None:
                    continue
                rest = [self.poly(o) for o in leaves if o is not leaf]
                if any(r is None for r in rest):
                    continue
                limit = b
                for r in rest:
                    limit = limit - r
                self.bounded.setdefault(var, None)
                self.facts.bounds.setdefault(var, []).append(limit)
                if scope is not None:
                    self.facts.scoped.setdefault(var, []).append((scope, limit))

    def _min_operands(self, node: Node, depth: int = 0) -> list[Poly]:
        """The integer operands of a ``min(A, B)`` call (``::min``, ``std::min``, ``umin``,
        nested, or through a local defined once as one) that are polynomials: each is an
        upper bound of what the call returns. [] for anything else."""
        n = strip(node)
        if depth > 4:
            return []
        if n.type == "identifier":
            name = self.text(n)
            if name in self.defs and self.substitutable(name) and self.defs[name][0] is not None:
                return self._min_operands(self.defs[name][0], depth + 1)
            return []
        if n.type != "call_expression":
            return []
        fn = n.child_by_field_name("function")
        args = n.child_by_field_name("arguments")
        if fn is None or args is None or \
                self.text(fn).split("::")[-1] not in ("min", "umin", "llmin", "ullmin"):
            return []
        out: list[Poly] = []
        for a in named_children(args):
            p = self.poly(a)
            out += [p] if p is not None else self._min_operands(a, depth + 1)
        return out

    def _starts_from(self, var: str, pointer: str) -> bool:
        """The first definition of ``var`` (a loop's ``int j = row_start``) is, or adds to, one
        element of ``pointer`` read directly (``ptr[r]``) or through a local loaded from it
        (``int row_start = ptr[r];``, also ``row_start + lane``)."""
        value = next((v for v in self.defs.get(var, []) if v is not None), None)
        if value is None:
            return False
        if self._loaded_from(value) == pointer:
            return True
        p = self.poly(value)
        if p is not None:
            return any(self.facts.loads.get(s) == pointer for s in p.symbols)
        # start + (threadIdx.x & 31): not a polynomial, but it adds to a loaded local
        value = strip(value)
        if value.type != "binary_expression" or operator(value) != "+":
            return False
        for side in (value.child_by_field_name("left"), value.child_by_field_name("right")):
            side = strip(side)
            if self._loaded_from(side) == pointer:
                return True
            if side.type == "identifier" and self.substitutable(self.text(side)) and \
                    self._loaded_from(self.defs[self.text(side)][0]) == pointer:
                return True
        return False

    def _axis(self, var: str) -> Optional[tuple[str, str]]:
        value = next((v for v in self.defs.get(var, []) if v is not None), None)
        if value is None or self._loaded_from(value) is not None:
            return None  # int id = ids[blockIdx.x]: a value read from memory, not a position
        found: set[str] = set()
        self._builtins_in(value, found, 0, set())
        for axis in "xyz":
            if f"blockIdx.{axis}" in found:
                return axis, "thread" if f"threadIdx.{axis}" in found else "block"
        return None

    def _builtins_in(self, node: Node, found: set[str], depth: int, seen: set[str]) -> None:
        if depth > _MAX_DEPTH:
            return
        for m in walk(node):
            if m.type == "field_expression":
                found.add(self.text(m).replace(" ", ""))
            elif m.type == "identifier":
                name = self.text(m)
                if name not in seen and name in self.defs:
                    seen.add(name)
                    for v in self.defs[name]:
                        if v is not None:
                            self._builtins_in(v, found, depth + 1, seen)

    def text(self, node: Node) -> str:
        if self.expansions:  # a node may be one of a macro's expansion (its own parse)
            raw = node.text
            if raw is not None:
                return raw.decode("utf-8", errors="replace")
        return self.parsed.text_of(node)


def _is_exit(stmt: Optional[Node]) -> bool:
    if stmt is None:
        return False
    if stmt.type in _EXITS:
        return True
    if stmt.type == "compound_statement":
        inner = named_children(stmt)
        return len(inner) == 1 and inner[0].type in _EXITS
    return False


def _is_declarator(ident: Node) -> bool:
    parent = ident.parent
    if parent is None:
        return False
    return parent.type in ("pointer_declarator", "array_declarator", "reference_declarator",
                           "init_declarator", "parameter_declaration", "declaration") \
        and parent.child_by_field_name("declarator") == ident


_MULTIPLY_INTRINSICS = ("__umul24", "__mul24")


def _expand_macro(name: str, args: list, macros: dict, depth: int) -> Optional[Poly]:
    """Macro ``name``'s replacement evaluated with its parameters bound to ``args``."""
    import ast

    params, text = macros[name]
    if len(params) != len(args) or depth > 8:
        return None
    env = dict(zip(params, args))
    try:
        tree = ast.parse(re.sub(r"\b(\d+)[uUlL]+\b", r"\1", text), mode="eval").body
    except SyntaxError:
        return None

    def ev(n: "ast.AST") -> Optional[Poly]:
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return Poly.const(n.value)
        if isinstance(n, ast.Name):
            return env.get(n.id)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            v = ev(n.operand)
            return None if v is None else (-v if isinstance(n.op, ast.USub) else v)
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            if a is None or b is None:
                return None
            if isinstance(n.op, ast.Add):
                return a + b
            if isinstance(n.op, ast.Sub):
                return a - b
            if isinstance(n.op, ast.Mult):
                return a * b
            if isinstance(n.op, ast.LShift) and b.is_const() and 0 <= b.constant < 63:
                return a * Poly.const(1 << b.constant)
            return None
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not n.keywords:
            inner = [ev(a) for a in n.args]
            if any(v is None for v in inner):
                return None
            if n.func.id in _MULTIPLY_INTRINSICS and len(inner) == 2:
                return inner[0] * inner[1]
            if n.func.id in macros:
                return _expand_macro(n.func.id, inner, macros, depth + 1)
        return None

    return ev(tree)


_HELPER_HEAD = re.compile(r"__device__[^;{}()]*?\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^()]*)\)"
                          r"\s*(?:const\s*)?\{")


def _helper_body(context: str, name: str) -> Optional[tuple[list[str], str]]:
    """(parameter names, body text) of the first ``__device__`` function ``name`` that
    ``context`` defines, or None."""
    if name not in context:
        return None
    for m in _HELPER_HEAD.finditer(context):
        if m.group("name") != name:
            continue
        depth, i = 1, m.end()
        while i < len(context) and depth:
            depth += {"{": 1, "}": -1}.get(context[i], 0)
            i += 1
        params = []
        for part in m.group("params").split(","):
            words = re.findall(r"[A-Za-z_]\w*", part.split("=")[0])
            if words:
                params.append(words[-1])
        return params, context[m.end():i - 1]
    return None


def analyze_body(parsed: Parsed, body: Node, kernel: Kernel, context: str = "",
                 qualified: Optional[dict[str, int]] = None) -> BodyFacts:
    """The facts of ``kernel``'s body (``body`` is its ``compound_statement`` in ``parsed``);
    ``context``: the text (headers and file) device helpers are looked up in; ``qualified``:
    values of qualified names (``x128::size``)."""
    a = BodyAnalysis(parsed, body, kernel, context, qualified)
    a.collect()
    a.finish_bounds()
    a.accesses()
    return a.facts


def _symbol_of(poly: Poly) -> Optional[str]:
    """``s`` when ``poly`` is exactly the symbol ``s`` (coefficient 1, no constant)."""
    if len(poly.terms) != 1:
        return None
    monomial, coef = poly.terms[0]
    return monomial[0] if coef == 1 and len(monomial) == 1 else None


# Bytes of CUDA's built-in vector types by base (CUDA C++ Programming Guide, "Built-in Vector
# Types"): a vector of n lanes is n times its base.
_VECTOR_BASE_BYTES = {"char": 1, "uchar": 1, "short": 2, "ushort": 2, "int": 4, "uint": 4,
                      "long": 8, "ulong": 8, "longlong": 8, "ulonglong": 8, "float": 4,
                      "double": 8}


def _type_bytes(ctype: str, context: str, depth: int = 0) -> Optional[int]:
    """Bytes of a C type: a scalar of ``dtypes`` (``__nv_bfloat16`` 2), a built-in vector
    (``int4`` 16, ``__half2`` 4), or a struct the file defines whose fields are such types or
    fixed arrays of them (``struct alignas(16) Packed { __nv_bfloat16 v[8]; }`` 16), rounded
    up to its ``alignas``; None when unknown (padding between fields is not modelled, so a
    struct whose fields differ in size is unknown too)."""
    name = dtypes.normalize_c_type(ctype)
    st = dtypes.spec_type_for_c(name)
    if st is not None:
        try:
            return dtypes.itemsize(dtypes.numpy_dtype(st))
        except ValueError:
            return None
    m = re.fullmatch(r"(u?(?:char|short|int|long|longlong)|float|double)([1-4])", name)
    if m:
        return _VECTOR_BASE_BYTES[m.group(1)] * int(m.group(2))
    vec = dtypes.vector_type_for_c(name)
    if vec is not None:
        try:
            return dtypes.itemsize(dtypes.numpy_dtype(vec[0])) * vec[1]
        except ValueError:
            return None
    if depth > 2 or not re.fullmatch(r"[A-Za-z_]\w*", name):
        return None
    found = re.search(rf"\bstruct\s+(?:alignas\s*\(\s*(\d+)\s*\)\s*)?{name}\s*\{{([^{{}}]*)\}}",
                      context)
    if found is None:
        return None
    sizes = []
    for field_text in found.group(2).split(";"):
        f = re.fullmatch(r"\s*([\w\s:]+?)\s+(\w+)\s*(?:\[\s*(\d+)\s*\])?\s*", field_text)
        if f is None:
            if field_text.strip():
                return None
            continue
        one = _type_bytes(f.group(1), context, depth + 1)
        if one is None:
            return None
        sizes.append((one, int(f.group(3) or 1)))
    if not sizes or len({one for one, _ in sizes}) != 1:
        return None
    total = sum(one * n for one, n in sizes)
    align = int(found.group(1) or 1)
    return -(-total // align) * align


def _in_for_header(node: Node) -> bool:
    """``node`` is (inside) a ``for``'s initializer or update: it runs before the loop's
    condition is checked again, so the condition bounds the value it leaves."""
    cur = node
    while cur.parent is not None:
        p = cur.parent
        if p.type == "for_statement":
            return cur in (p.child_by_field_name("initializer"), p.child_by_field_name("update"))
        if p.type in ("compound_statement", "expression_statement"):
            return False
        cur = p
    return False


def _ancestors_to(node: Node, top: Node) -> list[Node]:
    """The ancestors of ``node`` below ``top``, innermost first."""
    out = []
    cur = node.parent
    while cur is not None and cur.id != top.id:
        out.append(cur)
        cur = cur.parent
    return out
