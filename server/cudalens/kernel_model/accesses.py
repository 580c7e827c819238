"""A kernel's global-memory accesses: every read or write of an element of a pointer
parameter, with its element index, the guards in effect and the loops around it.

An access is reached through the parameter itself (``x[i]``, ``*(x + i)``, ``__ldg(&x[i])``,
``atomicAdd(&y[k], v)``) or through a local pointer declared from it (``const float* row = x +
r * C; row[j]``, ``const float* p = &x[i];``, chains of these), after the pointer bumps that
reach it (``x += k;`` among the body's top-level statements). Its element index, counted from
the parameter, is a ``Poly`` (``cudalens.spec.poly``) over the thread and block builtins
(``threadIdx.x``), loop variables, kernel parameters and file constants, with every local
that has one initializer and never changes folded in (``int idx = row * C + col;``) and the
file's macros expanded (``kernel_model.affine``, ``kernel_model.macros``); its ``kind`` is

- ``affine``: the index is that polynomial;
- ``data_dependent``: the index reads memory (``x[idx[i]]``), or uses a local whose value comes
  from memory, flow-insensitively: any definition of it loads (``int j = idx[i];``, ``for (int
  j = row_ptr[r]; j < row_ptr[r + 1]; ++j)``), directly or through other such locals;
- ``divmod``: the index divides (``i / T``, ``i % T``, ``i >> 2``) by something other than a
  constant folded away;
- ``opaque``: anything else (a call, a local that changes, a pointer moved in a loop).

Only ``affine`` accesses have an index; the others say why in ``reason``. Each access also
carries its guards, outermost first: the ``if``/``?:`` branches and ``&&``/``||`` right-hand
sides it sits in, and the ``if (c) return;`` (``continue``, ``break``) statements before it in
an enclosing block; and its enclosing loops, outermost first, with start, exclusive bound and
step where they are polynomials.

Pointer values the analysis cannot follow (passed to a function, stored other than as a local
pointer's initializer, ``&x[i]`` handed to anything but a read-only load) are ``Escape``s, and
the local pointers are ``Alias``es; ``memory(model)`` builds all three once per kernel version
and keeps them in ``KernelModel.facts``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from cudalens.kernel_model.affine import Scope, poly_of, strip_casts
from cudalens.kernel_model.loops import for_header
from cudalens.kernel_model.macros import file_macros, parse_expression, substitute
from cudalens.kernel_model.model import KernelModel
from cudalens.kernel_model.pointer_uses import classify, in_read_only_load, pointee_kind
from cudalens.kernel_model.syntax import (Node, Parsed, identifiers, named_children, operator,
                                          squeeze, unparen, walk)
from cudalens.spec.poly import Poly

Mode = Literal["read", "write", "read-write"]
Kind = Literal["affine", "divmod", "data_dependent", "opaque"]

# Atomic functions (CUDA C++ Programming Guide, "Atomic Functions"): all read the old value
# and write a new one except atomicExch, which only writes.
ATOMIC_RMW = frozenset({"atomicAdd", "atomicSub", "atomicMin", "atomicMax", "atomicInc",
                        "atomicDec", "atomicAnd", "atomicOr", "atomicXor", "atomicCAS"})
ATOMIC_WRITE = frozenset({"atomicExch"})
_LOOPS = ("for_statement", "while_statement", "do_statement", "for_range_loop")
_EXITS = ("return_statement", "continue_statement", "break_statement")
_MODES = {"read": "read", "write": "write", "update": "read-write"}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_MAX_DEPTH = 12


@dataclass(frozen=True)
class Comparison:
    """``left OP right`` with both sides polynomials (``op`` one of ``< <= > >= == !=``)."""

    left: Poly
    op: str
    right: Poly

    def __str__(self) -> str:
        return f"{self.left.render()} {self.op} {self.right.render()}"


@dataclass(frozen=True)
class Guard:
    """A condition in effect at an access: ``text`` as written (whitespace squeezed), which
    holds there when ``holds`` (an ``if``'s consequence) and fails there otherwise (its else
    branch, after ``if (text) return;``); ``line`` 1-based, of the condition; ``facts`` the
    comparisons it implies that are polynomial on both sides (the ``&&`` parts of a
    condition that holds, the negated ``||`` parts of one that fails); others are left out."""

    text: str
    holds: bool
    line: int
    facts: tuple[Comparison, ...] = ()

    def __str__(self) -> str:
        return self.text if self.holds else f"!({self.text})"


@dataclass(frozen=True)
class Loop:
    """A loop around an access. For ``for (T var = start; var < bound; var += step)``:
    ``var``, ``start``, ``bound`` (exclusive: ``var <= B`` gives ``B + 1``; ``B > var`` is
    read as ``var < B``) and ``step`` (``++var`` is 1, ``var -= S`` is ``-S``) as polynomials,
    each None where it is not one; ``while``/``do`` loops and other headers have ``var`` "".
    ``header`` is the loop's head as written, squeezed (``for (int r = -R; r <= R; ++r)``);
    ``line`` 1-based."""

    var: str
    start: Optional[Poly]
    bound: Optional[Poly]
    step: Optional[Poly]
    header: str
    line: int


@dataclass(frozen=True)
class Access:
    """One read or write of an element of pointer parameter ``param`` (see the module).

    ``mode``: ``read``, ``write`` or ``read-write`` (compound assignment, ``++``, atomic
    read-modify-write; ``atomicExch`` writes). ``kind`` and ``index`` (``affine`` only) and
    ``reason`` (why not affine, "" when affine). ``via`` the local pointer spelled ("" for the
    parameter itself); ``atomic`` the atomic function, if any. ``text`` the access's source
    (``x[i]``, ``*p``, ``__ldg(x + i)``), ``line`` 1-based, ``node`` its syntax node (of the
    model's ``parsed`` tree). ``guards`` and ``loops`` outermost first."""

    param: str
    mode: Mode
    kind: Kind
    index: Optional[Poly]
    reason: str
    guards: tuple[Guard, ...]
    loops: tuple[Loop, ...]
    line: int
    text: str
    via: str = ""
    atomic: str = ""
    node: Optional[Node] = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Alias:
    """Local pointer ``name`` declared from pointer parameter ``param`` (directly or through
    other aliases): ``offset`` its element offset from ``param`` (None where not a polynomial),
    ``const`` whether it points to const, ``text`` the declaration as written, ``line``
    1-based, ``reassigned`` the line of an assignment to it other than a bump (0 if none)."""

    name: str
    param: str
    offset: Optional[Poly]
    const: bool
    text: str
    line: int
    reassigned: int = 0
    node: Optional[Node] = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Escape:
    """A pointer value of ``param`` (through alias ``via`` when not "") that goes where the
    analysis cannot follow; ``text`` the smallest statement or call that shows it; ``const``
    when nothing can be written through it without a cast (it is a pointer to const: a const
    alias, or the initializer of a local pointer to const that is not an alias)."""

    param: str
    via: str
    line: int
    text: str
    const: bool = False
    node: Optional[Node] = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Memory:
    """What ``memory(model)`` finds, each in source order."""

    accesses: tuple[Access, ...]
    aliases: tuple[Alias, ...]
    escapes: tuple[Escape, ...]


def memory(model: KernelModel) -> Memory:
    """The accesses, aliases and escapes of ``model``'s kernel, built once per model (so
    once per kernel version) and kept in ``model.facts``. A kernel whose body the
    whole-file tree does not hold (``model.loose_body`` None) has none."""
    hit = model.facts.get("memory")
    if hit is None:
        hit = model.facts.setdefault("memory", _build(model))
    return hit


def accesses(model: KernelModel) -> tuple[Access, ...]:
    """``memory(model).accesses``: every global-memory access, in source order."""
    return memory(model).accesses


def _build(model: KernelModel) -> Memory:
    if model.loose_body is None:
        return Memory((), (), ())
    return _Builder(model).run()


# -- pointer arithmetic ----------------------------------------------------------------------


def _climb(ident: Node) -> tuple[Node, list[tuple[int, Node]]]:
    """The top of the pointer arithmetic around ``ident`` (parentheses, ``p + k``, ``k + p``,
    ``p - k``, as ``pointer_uses.classify`` climbs it) and the offsets added, with signs."""
    node, offsets = ident, []
    while node.parent is not None:
        p = node.parent
        if p.type == "parenthesized_expression":
            node = p
            continue
        if p.type == "binary_expression" and operator(p) in ("+", "-"):
            left, right = p.child_by_field_name("left"), p.child_by_field_name("right")
            if left == node:
                offsets.append((1 if operator(p) == "+" else -1, right))
                node = p
                continue
            if operator(p) == "+":
                offsets.append((1, left))
                node = p
                continue
        break
    return node, offsets


def _pointer_value(node: Node, parsed: Parsed) -> Optional[tuple[Node, list[tuple[int, Node]]]]:
    """(base identifier, offsets) of a pointer expression ``B``, ``B + k``, ``k + B``,
    ``B - k``, ``&B[k]``, ``&B[k] + j`` (parentheses and casts looked through), else None."""
    node = strip_casts(node, parsed)
    if node.type == "identifier":
        return node, []
    if node.type == "binary_expression" and operator(node) in ("+", "-"):
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        sign = 1 if operator(node) == "+" else -1
        got = _pointer_value(left, parsed)
        if got is not None:
            return got[0], got[1] + [(sign, right)]
        if sign == 1:
            got = _pointer_value(right, parsed)
            if got is not None:
                return got[0], got[1] + [(1, left)]
        return None
    if node.type == "pointer_expression" and operator(node) == "&":
        sub = strip_casts(node.child_by_field_name("argument"), parsed)
        if sub.type != "subscript_expression":
            return None
        base = strip_casts(sub.child_by_field_name("argument"), parsed)
        indices = sub.child_by_field_name("indices")
        inner = named_children(indices) if indices is not None else []
        if base.type != "identifier" or len(inner) != 1:
            return None
        return base, [(1, inner[0])]
    return None


def _atomic(ident: Node, parsed: Parsed) -> Optional[tuple[str, Node]]:
    """(function, first argument) when ``ident`` is the pointer of an atomic call's first
    argument (``atomicAdd(&y[k], v)``, ``atomicAdd(y + k, v)``)."""
    node = ident
    while node.parent is not None and node.parent.type in (
            "parenthesized_expression", "binary_expression", "subscript_expression",
            "pointer_expression"):
        p = node.parent
        if p.type == "subscript_expression" and p.child_by_field_name("argument") != node:
            return None
        if p.type == "binary_expression" and operator(p) not in ("+", "-"):
            return None
        if p.type == "pointer_expression" and operator(p) != "&":
            return None
        node = p
    args = node.parent
    if args is None or args.type != "argument_list" or named_children(args)[:1] != [node]:
        return None
    call = args.parent
    fn = call.child_by_field_name("function") if call is not None else None
    name = parsed.text_of(fn).split("<")[0].strip() if fn is not None else ""
    return (name, node) if name in ATOMIC_RMW | ATOMIC_WRITE else None


# -- memory reads inside expressions (an index read from memory) ------------------------------


def first_load(node: Node, parsed: Parsed) -> Optional[str]:
    """The first memory read under ``node`` (``a[k]``, ``*p``), squeezed; None if none."""
    for n in walk(node):
        if n.type == "subscript_expression" or (
                n.type == "pointer_expression" and parsed.text_of(n).lstrip().startswith("*")):
            return squeeze(parsed.text_of(n))
    return None


def loaded_names(body: Node, parsed: Parsed) -> dict[str, str]:
    """{name: why} of the locals of ``body`` whose value comes from memory: declared or
    assigned from an expression that reads memory or uses such a name, and ``for`` variables
    whose start or bound does (``for (int j = row_ptr[r]; j < row_ptr[r + 1]; ++j)``). ``why``
    is the read in quotes (``'row_ptr[r]'``) or ``NAME: WHY`` of the name it comes through."""
    sources: list[tuple[str, list[Node]]] = []
    for n in walk(body):
        if n.type == "init_declarator":
            d, v = n.child_by_field_name("declarator"), n.child_by_field_name("value")
            if d is not None and d.type == "identifier" and v is not None:
                sources.append((parsed.text_of(d), [v]))
        elif n.type == "assignment_expression":
            left = unparen(n.child_by_field_name("left"))
            if left.type == "identifier":
                sources.append((parsed.text_of(left), [n.child_by_field_name("right")]))
        elif n.type == "for_statement":
            head = for_header(n, parsed)
            if head is not None:
                parts = [c for c in (n.child_by_field_name("initializer"),
                                     n.child_by_field_name("condition")) if c is not None]
                sources.append((head.var, parts))
    loaded: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for var, parts in sources:
            if var in loaded:
                continue
            for part in parts:
                read = first_load(part, parsed)
                via = next((w for w in identifiers(part, parsed) if w in loaded and w != var),
                           None)
                if read is not None or via is not None:
                    loaded[var] = f"'{read}'" if read is not None else f"{via}: {loaded[via]}"
                    changed = True
                    break
    return loaded


# -- the builder -----------------------------------------------------------------------------


class _Builder:
    def __init__(self, model: KernelModel) -> None:
        self.parsed = parsed = model.parsed
        self.body = body = model.loose_body
        self.params = {p.name for p in model.kernel.parameters if p.is_pointer}
        self.macros = file_macros(parsed)
        self.declared: dict[str, list[tuple[Node, Optional[Node]]]] = {}
        self.assigned: dict[str, list[Node]] = {}  # name -> assignments / updates of it
        self.pointer_decls: dict[str, tuple[Node, Node, Optional[Node], bool]] = {}
        self.loop_vars: set[str] = set()
        for n in walk(body):
            if n.type == "declaration":
                self._declaration(n)
            elif n.type in ("assignment_expression", "update_expression"):
                target = unparen(n.child_by_field_name(
                    "left" if n.type == "assignment_expression" else "argument"))
                if target.type == "identifier":
                    self.assigned.setdefault(parsed.text_of(target), []).append(n)
            elif n.type == "for_statement":
                head = for_header(n, parsed, assignment=True)
                if head is not None:
                    self.loop_vars.add(head.var)
        locals_ = {name: (parsed, sites[0][1]) for name, sites in self.declared.items()
                   if len(sites) == 1 and sites[0][1] is not None and
                   name not in self.assigned and name not in self.pointer_decls}
        self.scope = Scope(macros=self.macros, locals=locals_)
        self.loaded = loaded_names(body, parsed)
        self.aliases: dict[str, Alias] = {}
        self.alias_parts: dict[str, tuple[str, list[tuple[int, Node]]]] = {}
        self.alias_bases: set[int] = set()  # ids of identifiers that start an alias
        self._aliases()

    def text(self, node: Node) -> str:
        return self.parsed.text_of(node)

    def _declaration(self, decl: Node) -> None:
        const = any(c.type == "type_qualifier" and self.text(c) == "const"
                    for c in decl.children)
        for d in decl.children_by_field_name("declarator"):
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            target = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if value is not None and value.type in ("initializer_list", "argument_list"):
                inner = named_children(value)
                value = inner[0] if len(inner) == 1 else None
            name_node = target
            while name_node is not None and name_node.type != "identifier":
                name_node = name_node.child_by_field_name("declarator")
            if name_node is None:
                continue
            name = self.text(name_node)
            self.declared.setdefault(name, []).append((d, value))
            if target is not None and target.type == "pointer_declarator" and \
                    value is not None:
                # const before the ``*`` (``const float*``, ``float const*``): the pointee's
                self.pointer_decls[name] = (decl, name_node, value, const)

    def _aliases(self) -> None:
        """Local pointers declared once from a parameter or another alias, in source order."""
        for name, (decl, name_node, value, const) in sorted(
                self.pointer_decls.items(), key=lambda kv: kv[1][0].start_byte):
            if len(self.declared.get(name, [])) != 1:
                continue
            got = _pointer_value(value, self.parsed)
            if got is None:
                continue
            base_node, offsets = got
            base = self.text(base_node)
            if base in self.params:
                param, parts = base, list(offsets)
            elif base in self.aliases:
                param, parts = self.alias_parts[base][0], self.alias_parts[base][1] + offsets
            else:
                continue
            reassigned = next((self.parsed.line_of(a) for a in self.assigned.get(name, [])
                               if self._bump(a, name) is None), 0)
            self.alias_parts[name] = (param, parts)
            self.alias_bases.add(base_node.id)
            self.aliases[name] = Alias(
                name=name, param=param, offset=self._sum(parts), const=const,
                text=squeeze(self.text(decl)), line=self.parsed.line_of(decl),
                reassigned=reassigned, node=decl)

    # -- bumps --

    def _bump(self, node: Node, name: str) -> Optional[tuple[int, Optional[Node]]]:
        """(sign, offset node; None for ``++``/``--``) when ``node`` moves pointer ``name``:
        ``p += k``, ``p -= k``, ``p = p + k``, ``p = k + p``, ``p = p - k``, ``++p``, ``p--``."""
        if node.type == "update_expression":
            return (1 if "++" in self.text(node) else -1), None
        op, right = operator(node), node.child_by_field_name("right")
        if op in ("+=", "-="):
            return (1 if op == "+=" else -1), right
        value = unparen(right) if right is not None else None
        if op == "=" and value is not None and value.type == "binary_expression" and \
                operator(value) in ("+", "-"):
            left, other = unparen(value.child_by_field_name("left")), \
                value.child_by_field_name("right")
            if left.type == "identifier" and self.text(left) == name:
                return (1 if operator(value) == "+" else -1), other
            if operator(value) == "+" and unparen(other).type == "identifier" and \
                    self.text(unparen(other)) == name:
                return 1, value.child_by_field_name("left")
        return None

    def _is_bump_target(self, ident: Node) -> bool:
        """``ident`` is the moved pointer of its own bump (its left side, or the ``p`` of
        ``p = p + k``)."""
        name = self.text(ident)
        for a in self.assigned.get(name, []):
            if a.start_byte <= ident.start_byte < a.end_byte and self._bump(a, name) is not None:
                target = unparen(a.child_by_field_name(
                    "left" if a.type == "assignment_expression" else "argument"))
                right = a.child_by_field_name("right") if a.type != "update_expression" \
                    else None
                return target == ident or (right is not None and
                                           right.start_byte <= ident.start_byte < right.end_byte
                                           and _climb(ident)[0] == unparen(right))
        return False

    def _bumps_before(self, name: str,
                      use: Node) -> tuple[list[tuple[int, Optional[Node]]], str]:
        """The offsets of the bumps of ``name`` that reach ``use`` (each one a top-level
        statement of the body ending before it), or a reason the offset is unknown."""
        parts: list[tuple[int, Node]] = []
        for a in self.assigned.get(name, []):
            bump = self._bump(a, name)
            where = self.parsed.line_of(a)
            anc = a.parent
            in_loop_around = False
            while anc is not None and anc.id != self.body.id:
                if anc.type in _LOOPS and anc.start_byte <= use.start_byte < anc.end_byte:
                    in_loop_around = True
                anc = anc.parent
            if bump is None:
                return [], f"{name} is assigned at line {where}"
            if in_loop_around:
                return [], f"{name} moves at line {where}, in a loop around the access"
            if a.start_byte > use.start_byte:
                continue
            stmt = a.parent
            if stmt is None or stmt.type != "expression_statement" or stmt.parent is None or \
                    stmt.parent.id != self.body.id:
                return [], f"{name} moves at line {where}, inside a branch or loop"
            parts.append(bump)  # (sign, None) for ++p / --p: one element
        return parts, ""

    # -- index --

    def _sum(self, parts: list[tuple[int, Optional[Node]]]) -> Optional[Poly]:
        """The sum of the signed offsets (None: one element), or None if one is not a
        polynomial."""
        total = Poly()
        for sign, node in parts:
            p = Poly.const(1) if node is None else poly_of(node, self.parsed, self.scope)
            if p is None:
                return None
            total = total + p if sign > 0 else total - p
        return total

    def _classify(self, parts: list[tuple[int, Optional[Node]]]
                  ) -> tuple[Kind, Optional[Poly], str]:
        """(kind, index, reason) of the element at the sum of ``parts`` (see the module)."""
        nodes = [n for _, n in parts if n is not None]
        read = next((r for r in (first_load(n, self.parsed) for n in nodes) if r), None)
        if read is not None:
            return "data_dependent", None, f"it reads '{read}'"
        names = sorted(set().union(*(identifiers(n, self.parsed) for n in nodes))) \
            if nodes else []
        via = next((w for w in names if w in self.loaded), None)
        if via is not None:
            return "data_dependent", None, f"{via} is computed from {self.loaded[via]}"
        total = self._sum(parts)
        if total is None:
            for n in nodes:
                div = self._division_at(n, self.parsed, 0)
                if div is not None:
                    return "divmod", None, div
            shown = " + ".join(squeeze(self.text(n)) for n in nodes)
            return "opaque", None, f"'{shown}' is not an integer polynomial"
        for sym in sorted(total.symbols):
            if sym in self.loop_vars or "." in sym:
                continue
            if sym in self.declared or sym in self.assigned:
                return "opaque", None, (f"{sym} is a local without one initializer that "
                                        f"never changes")
        return "affine", total, ""

    def _division_at(self, node: Node, parsed: Parsed, depth: int) -> Optional[str]:
        """``'a / b'`` (``%``, ``>>``) for the first division in ``node`` (of ``parsed``),
        locals folded and macros expanded, led by the local or macro call it comes through
        (``t = 'i / T'``, ``M(n) = '((n)) / 4'``); None if none."""
        if depth > _MAX_DEPTH:
            return None
        for n in walk(node):
            if n.type == "binary_expression" and operator(n) in ("/", "%", ">>"):
                return f"'{squeeze(parsed.text_of(n))}'"
            if n.type == "identifier":
                name = parsed.text_of(n)
                if name in self.scope.locals:
                    p2, init = self.scope.locals[name]
                    got = self._division_at(init, p2, depth + 1)
                    if got is not None:
                        return f"{name} = {got}"
                macro = self.macros.get(name)
                if macro is not None and macro.params is None:
                    got = self._expanded(macro.body, depth)
                    if got is not None:
                        return f"{name} = {got}"
            if n.type == "call_expression":
                fn, args = n.child_by_field_name("function"), n.child_by_field_name("arguments")
                macro = self.macros.get(parsed.text_of(fn)) if fn is not None else None
                if macro is not None and macro.params is not None and macro.expandable:
                    try:
                        text = substitute(macro, [parsed.text_of(a)
                                                  for a in named_children(args)])
                    except ValueError:
                        continue
                    got = self._expanded(text, depth)
                    if got is not None:
                        return f"{squeeze(parsed.text_of(n))} = {got}"
        return None

    def _expanded(self, text: str, depth: int) -> Optional[str]:
        try:
            p2, expr = parse_expression(text)
        except ValueError:
            return None
        return self._division_at(expr, p2, depth + 1)

    # -- context --

    def _guards(self, node: Node) -> tuple[Guard, ...]:
        out: list[Guard] = []
        cur = node
        while cur.parent is not None and cur.id != self.body.id:
            parent = cur.parent
            t = parent.type
            if t == "if_statement":
                cond = parent.child_by_field_name("condition")
                if cur == parent.child_by_field_name("consequence"):
                    out.append(self._guard(cond, True))
                elif cur == parent.child_by_field_name("alternative"):
                    out.append(self._guard(cond, False))
            elif t == "else_clause":
                pass  # its if_statement is the next parent
            elif t == "conditional_expression":
                cond = parent.child_by_field_name("condition")
                if cur == parent.child_by_field_name("consequence"):
                    out.append(self._guard(cond, True))
                elif cur == parent.child_by_field_name("alternative"):
                    out.append(self._guard(cond, False))
            elif t == "binary_expression" and operator(parent) in ("&&", "||") and \
                    cur == parent.child_by_field_name("right"):
                out.append(self._guard(parent.child_by_field_name("left"),
                                       operator(parent) == "&&"))
            elif t == "compound_statement":
                for stmt in reversed([s for s in named_children(parent)
                                      if s.end_byte <= cur.start_byte]):
                    cond = self._exit_condition(stmt)
                    if cond is not None:
                        out.append(self._guard(cond, False))
            cur = parent
        return tuple(reversed(out))

    def _exit_condition(self, stmt: Node) -> Optional[Node]:
        """``c`` of ``if (c) return;`` (``{ return; }``, ``continue``, ``break``) without an
        else branch; None otherwise."""
        if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
            return None
        then = stmt.child_by_field_name("consequence")
        if then is not None and then.type == "compound_statement":
            inner = named_children(then)
            then = inner[0] if len(inner) == 1 else None
        if then is None or then.type not in _EXITS:
            return None
        return stmt.child_by_field_name("condition")

    def _guard(self, cond: Node, holds: bool) -> Guard:
        inner = unparen(cond)
        return Guard(text=squeeze(self.text(inner)), holds=holds, line=self.parsed.line_of(inner),
                     facts=tuple(self._facts(inner, holds)))

    def _facts(self, cond: Node, holds: bool) -> list[Comparison]:
        cond = unparen(cond)
        if cond.type != "binary_expression":
            return []
        op = operator(cond)
        if op == ("&&" if holds else "||"):
            return self._facts(cond.child_by_field_name("left"), holds) + \
                self._facts(cond.child_by_field_name("right"), holds)
        if op not in _FLIP:
            return []
        left = poly_of(cond.child_by_field_name("left"), self.parsed, self.scope)
        right = poly_of(cond.child_by_field_name("right"), self.parsed, self.scope)
        if left is None or right is None:
            return []
        return [Comparison(left, op if holds else _NEGATE[op], right)]

    def _loops(self, node: Node) -> tuple[Loop, ...]:
        out: list[Loop] = []
        cur = node
        while cur.parent is not None and cur.id != self.body.id:
            parent = cur.parent
            if parent.type in _LOOPS and cur == parent.child_by_field_name("body"):
                out.append(self._loop(parent))
            cur = parent
        return tuple(reversed(out))

    def _loop(self, loop: Node) -> Loop:
        body = loop.child_by_field_name("body")
        end = body.start_byte if body is not None else loop.end_byte
        header = squeeze(self.parsed.data[loop.start_byte:end].decode("utf-8", "replace"))
        line = self.parsed.line_of(loop)
        head = for_header(loop, self.parsed, assignment=True) \
            if loop.type == "for_statement" else None
        if head is None:
            return Loop("", None, None, None, header, line)
        start = poly_of(head.start, self.parsed, self.scope)
        bound = None
        cond = head.cond
        if cond.type == "binary_expression":
            op = operator(cond)
            left, right = unparen(cond.child_by_field_name("left")), \
                unparen(cond.child_by_field_name("right"))
            if left.type != "identifier" or self.text(left) != head.var:
                op, right = _FLIP.get(op, ""), left
                left = unparen(cond.child_by_field_name("right"))
            if left.type == "identifier" and self.text(left) == head.var and op in ("<", "<="):
                b = poly_of(right, self.parsed, self.scope)
                bound = None if b is None else b + Poly.const(1 if op == "<=" else 0)
        return Loop(head.var, start, bound, self._step(head.update, head.var), header, line)

    def _step(self, update: Node, var: str) -> Optional[Poly]:
        update = unparen(update)
        if update.type == "update_expression":
            arg = unparen(update.child_by_field_name("argument"))
            if arg.type == "identifier" and self.text(arg) == var:
                return Poly.const(1 if "++" in self.text(update) else -1)
            return None
        if update.type != "assignment_expression":
            return None
        left = unparen(update.child_by_field_name("left"))
        if left.type != "identifier" or self.text(left) != var:
            return None
        bump = self._bump(update, var)
        if bump is None:
            return None
        sign, value = bump
        p = poly_of(value, self.parsed, self.scope)
        return None if p is None else (p if sign > 0 else -p)

    # -- the walk --

    def run(self) -> Memory:
        found: list[Access] = []
        escapes: list[Escape] = []
        names = self.params | set(self.aliases)
        for ident in walk(self.body):
            if ident.type != "identifier":
                continue
            name = self.text(ident)
            if name not in names or ident.id in self.alias_bases:
                continue
            parent = ident.parent
            if name in self.aliases and parent is not None and \
                    parent.id == self.aliases[name].node.id:
                continue
            if name in self.aliases and any(
                    d.start_byte <= ident.start_byte < d.end_byte and
                    ident == self.pointer_decls[name][1]
                    for d, _ in self.declared.get(name, [])):
                continue  # the alias's own declarator
            if self._is_bump_target(ident):
                continue
            got = self._access(ident, name)
            if isinstance(got, Access):
                found.append(got)
            elif got is not None:
                escapes.append(got)
        found.sort(key=lambda a: (a.node.start_byte, -a.node.end_byte))
        return Memory(tuple(found), tuple(self.aliases.values()), tuple(escapes))

    def _access(self, ident: Node, name: str) -> "Access | Escape":
        """The access (or escape) that identifier ``ident`` of pointer ``name`` makes."""
        param, via = (name, "") if name in self.params else (self.aliases[name].param, name)
        atomic = _atomic(ident, self.parsed)
        use = classify(ident, self.parsed)
        top, offsets = _climb(ident)
        if atomic is not None:
            fn, arg = atomic
            mode: Mode = "read-write" if fn in ATOMIC_RMW else "write"
            node = arg.parent.parent
            if use.form == "subscript" and use.index is not None:
                offsets = offsets + [(1, use.index)]
        elif use.access is not None and use.kind != "escape":
            mode = _MODES[pointee_kind(use.access, self.parsed)]
            node = use.access
            if use.index is not None:
                offsets = offsets + [(1, use.index)]
            elif use.form == "subscript":
                return Escape(param, via, use.line, use.text, use.access)
        elif use.kind == "read" and use.access is None and in_read_only_load(top, self.parsed):
            mode, node = "read", top.parent.parent  # __ldg(x + i)
        else:
            const = use.kind == "read" or (bool(via) and self.aliases[name].const)
            return Escape(param, via, use.line, use.text, const, ident)
        parts = list(self.alias_parts[name][1]) if via else []
        bumps, why = self._bumps_before(name, ident)
        if via and not why:
            more, why = self._bumps_before(param, self.aliases[name].node)
            bumps = more + bumps
            if not why and self.aliases[name].reassigned:
                why = f"{name} is assigned at line {self.aliases[name].reassigned}"
        kind, index, reason = self._classify(bumps + parts + offsets)
        if why and kind != "data_dependent":
            kind, index, reason = "opaque", None, why
        return Access(param=param, mode=mode, kind=kind, index=index, reason=reason,
                      guards=self._guards(node), loops=self._loops(node),
                      line=self.parsed.line_of(node),
                      # a write through a macro shows the macro call (use.text: 'AT(x[1])')
                      text=use.text if node is use.access else self.text(node), via=via,
                      atomic=atomic[0] if atomic is not None else "", node=node)

