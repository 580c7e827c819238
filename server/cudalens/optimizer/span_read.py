"""The per-thread load of a block reduction read as one contiguous, guarded span.

``coarsen_reduce``'s vector form loads a block's inputs 16 bytes at a time. It needs to know
that the statements before the tree's first barrier (``TreeReduction.load``) read one input
buffer at one index per original thread ``t``, ``IDX(t) = blockIdx.x * B + t`` (through
locals, casts and macros: ``cudalens.optimizer.affine``), guarded by one bound test::

    s[tid] = (i < n) ? in[i] : 0.0f;               // a conditional's consequence
    if (g < count) v = data[g];                    // an if's consequence (else: no read)
    c[tid] = (i < n && data[i] > 0.0f) ? 1 : 0;    // the right side of '&&'
    s[tid] = in[blockIdx.x * blockDim.x + tid];    // no guard: every thread reads

The guard ``G`` is ``A < X`` (or ``A <= X``, ``X > A``, ``X >= A``) with ``A`` the index
and ``X`` free of the thread (no builtin, no local of the statements). Every read sits under
``G``, and at least one is reached whenever ``G`` holds (no other condition above it), so
when ``G`` holds for the block's last thread ``t = B - 1`` it holds for every ``t``
(``IDX`` grows with ``t``), and the original reads every element ``IDX(0) .. IDX(B - 1)``:
loading them as vectors reads nothing the original does not.

``match`` returns a ``Span`` or raises ``NotSpan`` with the reason and its line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.kernel_model.syntax import Parsed, identifiers, named_children, unparen, walk
from cudalens.optimizer.affine import Scope, builtin_field, poly_of, strip_casts
from cudalens.optimizer.macros import file_macros
from cudalens.optimizer.pointer_uses import pointer_uses
from cudalens.optimizer.reasons import LocatedError
from cudalens.spec.poly import Poly


class NotSpan(LocatedError):
    """The per-thread statements are not one guarded read of a span; the message says why."""


@dataclass(frozen=True)
class Span:
    """``buffer``: the pointer parameter read; ``reads``: its ``buffer[IDX]`` nodes;
    ``index``: one read's index node (every read's index is the same polynomial);
    ``guard``: the bound test ``G`` (None when no read is guarded); ``deps``: the top-level
    declarations of the statements that ``IDX`` and ``G`` use, in order (each free of memory
    reads and calls)."""

    buffer: str
    reads: tuple[tree_sitter.Node, ...]
    index: tree_sitter.Node
    guard: Optional[tree_sitter.Node]
    deps: tuple[tree_sitter.Node, ...]


def _fail(msg: str, line: Optional[int] = None) -> NotSpan:
    return NotSpan(msg, line)


def _declared(stmts) -> dict[str, tuple[tree_sitter.Node, tree_sitter.Node]]:
    out = {}
    for s in stmts:
        if s.type != "declaration":
            continue
        for d in s.children_by_field_name("declarator"):
            if d.type == "init_declarator" and \
                    d.child_by_field_name("declarator").type == "identifier":
                out[d.child_by_field_name("declarator")] = (s, d.child_by_field_name("value"))
    return out


def _conjuncts(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    node = unparen(node)
    if node.type == "condition_clause" and len(named_children(node)) == 1:
        node = unparen(named_children(node)[0])
    if node.type == "binary_expression" and node.child_by_field_name("operator").type == "&&":
        return _conjuncts(node.child_by_field_name("left")) + \
            _conjuncts(node.child_by_field_name("right"))
    return [node]


def _conditions(read: tree_sitter.Node, top: tree_sitter.Node,
                parsed: Parsed) -> list[tree_sitter.Node]:
    """The conjuncts of every condition that must hold for ``read`` to be evaluated, up to the
    statement ``top``. Raises where the read sits under a loop, an else branch or ``||``."""
    out: list[tree_sitter.Node] = []
    child, cur = read, read.parent
    while cur is not None and child != top:
        t = cur.type
        if t == "conditional_expression":
            if child == cur.child_by_field_name("consequence"):
                out += _conjuncts(cur.child_by_field_name("condition"))
            elif child == cur.child_by_field_name("alternative"):
                raise _fail(f"'{parsed.text_of(read)}' (line {parsed.line_of(read)}) is read "
                            f"when the condition fails", parsed.line_of(read))
        elif t == "binary_expression" and cur.child_by_field_name("operator").type in ("&&",
                                                                                       "||"):
            if child == cur.child_by_field_name("right"):
                if cur.child_by_field_name("operator").type == "||":
                    raise _fail(f"'{parsed.text_of(read)}' (line {parsed.line_of(read)}) is "
                                f"read on the right of '||'", parsed.line_of(read))
                out += _conjuncts(cur.child_by_field_name("left"))
        elif t == "if_statement":
            if child == cur.child_by_field_name("consequence"):
                out += _conjuncts(cur.child_by_field_name("condition"))
            elif child != cur.child_by_field_name("condition"):
                raise _fail(f"'{parsed.text_of(read)}' (line {parsed.line_of(read)}) is read "
                            f"in an else branch", parsed.line_of(read))
        elif t in ("for_statement", "while_statement", "do_statement", "switch_statement"):
            raise _fail(f"'{parsed.text_of(read)}' (line {parsed.line_of(read)}) is read inside "
                        f"a loop or switch: not one element per thread", parsed.line_of(read))
        child, cur = cur, cur.parent
    return out


def match(ctx, stmts: list[tree_sitter.Node], parsed: Parsed, tids: set[str],
          block_x: int, ignore: frozenset[str] = frozenset()) -> Span:
    """The span read of the per-thread statements ``stmts`` (module doc) for blocks of
    ``block_x`` threads; ``tids``: the locals equal to ``threadIdx.x``; ``ignore``: pointer
    parameters whose uses are not reads to match (a histogram's ``atomicAdd`` target, which
    the caller handles).

    Raises:
        NotSpan: the statements read another way (the message says how, with its line).
    """
    pointers = {q.name for q in ctx.kernel.parameters if q.is_pointer} - set(ignore)
    uses = [u for s in stmts for u in pointer_uses(s, parsed, pointers)]
    if not uses:
        raise _fail("the per-thread statements read no pointer parameter")
    names = sorted({u.name for u in uses})
    if len(names) != 1:
        raise _fail(f"the per-thread statements read {', '.join(names)}; the vector form "
                    f"loads one buffer")
    for u in uses:
        up = u.access.parent if u.access is not None else None
        while up is not None and up.type == "parenthesized_expression":
            up = up.parent
        if up is not None and up.type == "pointer_expression":  # __ldg(&x[i]): an address
            raise _fail(f"{u.name} is used as '{parsed.text_of(up)}' (line {u.line}), not "
                        f"read as {u.name}[index]", u.line)
        if u.kind != "read" or u.form != "subscript" or u.index is None:
            raise _fail(f"{u.name} is used as '{u.text}' (line {u.line}), not read as "
                        f"{u.name}[index]", u.line)
    declared = _declared(stmts)
    by_name = {parsed.text_of(k): v for k, v in declared.items()}
    assigned = set()
    for s in stmts:
        for n in walk(s):
            tgt = n.child_by_field_name("left") if n.type == "assignment_expression" else \
                n.child_by_field_name("argument") if n.type == "update_expression" else None
            if tgt is not None and unparen(tgt).type == "identifier":
                assigned.add(parsed.text_of(unparen(tgt)))
    locals_ = {k: (parsed, v[1]) for k, v in by_name.items() if k not in assigned}
    scope = Scope(macros=file_macros(parsed), locals=locals_)
    want = Poly.sym("blockIdx.x") * Poly.const(block_x) + Poly.sym("threadIdx.x")

    def poly(node):
        p = poly_of(node, parsed, scope)
        if p is None:
            return None
        return p.substitute(lambda s: Poly.const(block_x) if s == "blockDim.x"
                            else Poly.sym("threadIdx.x") if s in tids else Poly.sym(s))

    for u in uses:
        if poly(u.index) != want:
            raise _fail(f"the read '{u.text}' (line {u.line}) is not at blockIdx.x * "
                        f"{block_x} + threadIdx.x: not one element per thread of a "
                        f"contiguous span", u.line)
    tops = []
    for u in uses:
        top = next(s for s in stmts if s.start_byte <= u.access.start_byte < s.end_byte)
        tops.append(top)

    def is_guard(c: tree_sitter.Node) -> bool:
        c = strip_casts(c, parsed)
        if c.type != "binary_expression":
            return False
        op = c.child_by_field_name("operator").type
        left, right = c.child_by_field_name("left"), c.child_by_field_name("right")
        if op in (">", ">="):
            left, right = right, left
        elif op not in ("<", "<="):
            return False
        if poly(left) != want:
            return False
        for n in walk(right):
            if n.type == "identifier" and (parsed.text_of(n) in by_name or
                                           parsed.text_of(n) in tids):
                return False
            if builtin_field(n, parsed) or n.type in ("subscript_expression", "call_expression",
                                                      "pointer_expression"):
                return False
        return True

    guard, plain = None, False
    for u, top in zip(uses, tops):
        conds = _conditions(u.access, top, parsed)
        tests = [c for c in conds if is_guard(c)]
        if conds and not tests:
            raise _fail(f"the read '{u.text}' (line {u.line}) is guarded by "
                        f"'{parsed.text_of(conds[0])}', not by a bound on its index", u.line)
        if tests:
            if guard is not None and "".join(parsed.text_of(tests[0]).split()) != \
                    "".join(parsed.text_of(guard).split()):
                raise _fail(f"the reads are guarded by '{parsed.text_of(guard)}' and "
                            f"'{parsed.text_of(tests[0])}' (line {u.line})", u.line)
            guard = tests[0]
        if len(conds) == len(tests) <= 1:
            plain = True
    if guard is not None and any(not _conditions(u.access, t, parsed)
                                 for u, t in zip(uses, tops)):
        guard = None  # one read is unconditional: every thread reads its element
    if not plain:
        raise _fail(f"no read of {names[0]} is reached whenever its bound holds (line "
                    f"{uses[0].line}): the original may skip elements", uses[0].line)
    # the declarations the index and the guard use, transitively
    need: set[str] = set()
    todo = [uses[0].index] + ([guard] if guard is not None else [])
    while todo:
        node = todo.pop()
        for word in identifiers(node, parsed):
            if word in by_name and word not in need:
                if word in assigned:
                    raise _fail(f"the index uses {word}, which the statements change")
                need.add(word)
                todo.append(by_name[word][1])
    deps = []
    for s in stmts:
        if s.type == "declaration" and any(
                parsed.text_of(k) in need for k, v in declared.items() if v[0] == s):
            for n in walk(s):
                if n.type in ("subscript_expression", "call_expression", "pointer_expression",
                              "assignment_expression", "update_expression"):
                    raise _fail(f"the declaration '{parsed.text_of(s)}' (line "
                                f"{parsed.line_of(s)}) that the index uses reads memory or "
                                f"calls a function", parsed.line_of(s))
            deps.append(s)
    return Span(names[0], tuple(u.access for u in uses), uses[0].index, guard, tuple(deps))
