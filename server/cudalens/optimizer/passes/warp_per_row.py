"""Pass ``warp_per_row``: a one-thread-per-row kernel becomes one warp per row.

Kernels such as a row softmax, a layer norm or a row sum often give each thread a whole row
and loop over its columns. Neighbouring threads then read addresses a row apart, so every
warp request touches 32 different 32-byte sectors (uncoalesced), and a matrix of ``R`` rows
runs only ``R`` threads. With a warp per row, the 32 lanes read 32 consecutive elements of
the row (one 128-byte request for 4-byte elements), the grid has 32x the threads, and each
per-row reduction is combined across the lanes with ``__shfl_xor_sync``, which leaves the
result in every lane (CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory";
CUDA C++ Programming Guide, "Warp Shuffle Functions").

Recognized::

    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;                      // or if (row < rows) { ... }
    ...straight-line statements and loops for (int c = S; c < B; ++c) { ... }...

where every loop's statements are per-column work: accumulations into variables declared
outside the loops (``acc += E``, ``acc = acc + E``, ``acc = fmaxf(acc, E)``, ``fminf``, ``max``,
``min``, or a max/min written as a comparison: ``if (E > acc) acc = E;``, ``acc = (E > acc) ?
E : acc;``, ``cudalens.optimizer.minmax``; a sum must start from 0), loop-local temporaries, and stores. Buffers are reached as
parameters or through local pointers ``T* yr = y + offset;``. A buffer the kernel writes must
be accessed only inside the loops as ``p[c]``, through one pointer, so each element is
written and read back by the lane that owns its column, or only by statements outside the
loops that store one value per row (``y[row] = acc;``), which lane 0 then executes (every
lane holds the same combined value: a butterfly of commutative combines); buffers only read
may be indexed anyhow. Nothing else may change between loops except variables computed from
finished accumulators.

The rewrite edits the original text in place: ``row`` becomes the warp's index, each loop
starts at ``S + lane`` and steps by 32, and after a loop with accumulations each accumulator
is combined across the warp (5 ``__shfl_xor_sync`` steps). Sums are added in a different
order (within the tolerance the runner checks, not bit for bit); maxima and minima are exact
(one written as a comparison is combined across the lanes with the same comparison: the
original's result for inputs without NaN; the explanation says so).

Parameters: ``warps_per_block`` (4, 8, 2): block ``32 * warps_per_block``, grid
``ceil_div(rows, warps_per_block)``; ``gridstride``: the warps loop over the rows (``row +=
warps in the grid``), so the rewrite is also correct under the user's original launch (any
block of a multiple of 32 threads, any grid): a drop-in (``cudalens.dropin``). Offered for
every warp count unless the body returns after the guard.
"""

from __future__ import annotations

import dataclasses
import re
from functools import partial
from typing import Optional

import tree_sitter

from cudalens.optimizer import bound_locals, memory_acc, minmax, structural
from cudalens.optimizer.affine import (Scope, builtin_field, is_global_index, poly_of,
                                       split_linear, strip_casts)
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.index2d import NoMatch, spec_text
from cudalens.optimizer.macros import file_macros
from cudalens.optimizer.reasons import Reason
from cudalens.optimizer.row_group import BEGIN as _BEGIN, END as _END, GONE, Loop as _Loop
from cudalens.optimizer.row_group import Match as _Match
from cudalens.optimizer.row_group import decl_type as _decl_type
from cudalens.optimizer.row_group import gridstride_blocker as _gridstride_blocker
from cudalens.optimizer.row_group import online_pair, reindent as _reindent, rewrite
from cudalens.kernel_model.file_facts import file_identifiers
from cudalens.kernel_model.edits import Edit, apply_edits, fresh_name, line_indent
from cudalens.kernel_model.loops import for_header, less_than_bound
from cudalens.kernel_model.model import UnreadableBody, readable_body, readable_body_or
from cudalens.kernel_model.syntax import (Parsed, assigned_names, identifiers, named_children,
                                          unparen, walk, written_target)
from cudalens.kernel_model.syntax import short_text
from cudalens.spec.model import BufferDecl
from cudalens.spec.poly import Poly

name = "warp_per_row"

WARPS_PER_BLOCK = (4, 8, 2)
WARP = 32
COMBINES = ("fmaxf", "fminf", "fmax", "fmin", "max", "min")
_ZERO = re.compile(r"^\(?\s*0+(\.0*)?[fF]?\s*\)?$|^\(?\s*0?\.0+[fF]?\s*\)?$")


def _fail(msg: str, line: Optional[int] = None) -> NoMatch:
    return NoMatch(msg, line)


_short = partial(short_text, limit=70)  # reasons here quote up to 70 characters


def _at_most(head, p: Parsed) -> bool:
    """The loop's condition is ``var <= BOUND`` (a causal row: ``t2 <= t``); the lanes' start
    and stride change, the condition stays."""
    cond = head.cond
    return cond.type == "binary_expression" and \
        cond.child_by_field_name("operator").type == "<=" and \
        p.text_of(unparen(cond.child_by_field_name("left"))) == head.var


class _Analysis:
    def __init__(self, ctx: PassContext, parsed: Parsed, stmts: list[tree_sitter.Node],
                 index: str):
        self.ctx, self.p, self.stmts, self.index = ctx, parsed, stmts, index
        self.params = {q.name for q in ctx.kernel.parameters if q.is_pointer}
        self.aliases: dict[str, str] = {}  # local pointer -> parameter
        self.scope = Scope(macros=file_macros(parsed))
        self.row_stores: list[tree_sitter.Node] = []  # statements storing one value per row

    def run(self) -> tuple[_Loop, ...]:
        p = self.p
        loops: list[_Loop] = []
        outer_locals: set[str] = set()
        if not any(s.type == "for_statement" for s in self.stmts):
            raise _fail("no loop over the row's columns: each thread handles one element, not "
                        "a row")
        for stmt in self.stmts:
            for n in walk(stmt):
                if n.type in ("return_statement", "goto_statement", "break_statement",
                              "continue_statement"):
                    raise _fail(f"'{_short(p, n)}' at line {p.line_of(n)}: the rows' work "
                                f"must run straight through", line=p.line_of(n))
            tied = structural.thread_tied(stmt, p)
            if tied:
                raise _fail(f"the body uses {tied}; threads cooperate already")
            builtin = structural.builtin_uses(stmt, p)
            if builtin:
                raise _fail(f"the body uses {builtin} beyond the row index")
            call = structural.impure_call(stmt, p, self.scope.macros)
            if call:
                raise _fail(f"the body calls {call}, which may have side effects")
            if stmt.type == "declaration":
                self._declaration(stmt, outer_locals)
            elif stmt.type == "for_statement":
                loops.append(self._loop(stmt, outer_locals))
            elif stmt.type == "expression_statement":
                targets = [t for t in (written_target(n) for n in walk(stmt)) if t is not None]
                if len(targets) == 1 and targets[0].type == "subscript_expression" and \
                        p.text_of(targets[0].child_by_field_name("argument")) in \
                        self.params | set(self.aliases):
                    self.row_stores.append(stmt)  # a per-row result: lane 0 stores it
                    continue
                if not targets or any(t.type != "identifier" or p.text_of(t) not in outer_locals
                                      for t in targets):
                    raise _fail(f"'{_short(p, stmt)}' at line {p.line_of(stmt)}: between the "
                                f"loops only local variables and per-row results may change",
                                line=p.line_of(stmt))
            else:
                raise _fail(f"'{_short(p, stmt)}' at line {p.line_of(stmt)}: expected "
                            f"declarations, assignments and column loops only",
                            line=p.line_of(stmt))
        if not loops:
            raise _fail("no loop over the row's columns")
        first: dict[str, tuple[str, int]] = {}  # accumulator -> (kind, line of its first loop)
        for loop in loops:
            line = p.line_of(loop.node)
            for acc, kind in loop.accumulators:
                if acc in first and "+" in (kind, first[acc][0]):
                    raise _fail(f"the sum {acc} is accumulated in the loops at lines "
                                f"{first[acc][1]} and {line}: combined across the lanes after "
                                f"the first, every lane would add the row's total again after "
                                f"the second", line=line)
                first.setdefault(acc, (kind, line))
        self._buffers()
        return tuple(loops)

    def _declaration(self, stmt: tree_sitter.Node, outer: set[str]) -> None:
        p = self.p
        for d in stmt.children_by_field_name("declarator"):
            inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            if inner is not None and inner.type == "pointer_declarator":
                value = d.child_by_field_name("value") if d.type == "init_declarator" else None
                base = self._pointer_base(value)
                ident = inner
                while ident is not None and ident.type != "identifier":
                    ident = ident.child_by_field_name("declarator")
                if base is None or ident is None:
                    raise _fail(f"'{_short(p, stmt)}' (line {p.line_of(stmt)}): a local pointer "
                                f"must be a parameter plus an offset", line=p.line_of(stmt))
                self.aliases[p.text_of(ident)] = base
                continue
            if inner is not None and inner.type == "identifier":
                outer.add(p.text_of(inner))

    def _pointer_base(self, value: Optional[tree_sitter.Node]) -> Optional[str]:
        if value is None:
            return None
        node = strip_casts(value, self.p)
        if node.type == "identifier" and self.p.text_of(node) in self.params:
            return self.p.text_of(node)
        if node.type != "binary_expression" or node.child_by_field_name("operator").type != "+":
            return None
        terms, stack = [], [node]  # the terms of a sum (p + a*b + c*d: one pointer, offsets)
        while stack:
            cur = strip_casts(stack.pop(), self.p)
            if cur.type == "binary_expression" and cur.child_by_field_name("operator").type == "+":
                stack += [cur.child_by_field_name("right"), cur.child_by_field_name("left")]
            else:
                terms.append(cur)
        bases = [t for t in terms if t.type == "identifier" and self.p.text_of(t) in self.params]
        if len(bases) != 1:
            return None
        for t in terms:
            if t is not bases[0] and any(
                    n.type == "identifier" and self.p.text_of(n) in self.params | set(self.aliases)
                    for n in walk(t)):
                return None
        return self.p.text_of(bases[0])

    def _loop(self, loop: tree_sitter.Node, outer: set[str]) -> _Loop:
        p = self.p
        bad = _fail(f"the loop at line {p.line_of(loop)} ('{_short(p, loop)}') is not 'for (int "
                    f"c = start; c < end; ++c)' over the row", line=p.line_of(loop))
        head = for_header(loop, p)
        if head is None or (less_than_bound(head, p) is None and not _at_most(head, p)):
            raise bad
        var = head.var
        if p.text_of(unparen(head.update)).replace(" ", "") not in (f"++{var}", f"{var}++",
                                                                    f"{var}+=1"):
            raise bad
        body = loop.child_by_field_name("body")
        accs: list[tuple[str, str]] = []
        for n in walk(body):
            if n.type in ("for_statement", "while_statement", "do_statement"):
                raise _fail(f"nested loop at line {p.line_of(n)}", line=p.line_of(n))
            target = written_target(n)
            if target is None:
                continue
            if target.type == "identifier":
                word = p.text_of(target)
                if word == var:
                    raise _fail(f"the loop at line {p.line_of(loop)} changes {var} in its body",
                                line=p.line_of(loop))
                if word in outer:
                    kind = self._reduction(n, word)
                    if kind is None:
                        raise _fail(f"'{_short(p, n)}' (line {p.line_of(n)}) changes {word} "
                                    f"across columns but is not 'acc += value', 'acc = "
                                    f"fmaxf(acc, value)' or 'if (value > acc) acc = value'",
                                    line=p.line_of(n))
                    if any(a == word and k != kind for a, k in accs):
                        raise _fail(f"{word} is combined in two ways in the loop at line "
                                    f"{p.line_of(loop)}", line=p.line_of(loop))
                    if (word, kind) not in accs:
                        accs.append((word, kind))
        for word, kind in accs:
            if kind == "+" and not self._starts_at_zero(word):
                raise _fail(f"the sum {word} does not start from 0 (each lane would add its "
                            f"starting value once)")
            reads = [n for n in walk(body) if n.type == "identifier" and p.text_of(n) == word
                     and not self._in_own_update(n, word)]
            if reads:
                raise _fail(f"{word} is read inside the loop at line {p.line_of(reads[0])} "
                            f"before the loop has finished it", line=p.line_of(reads[0]))
        return _Loop(loop, var, head.start, head.update, tuple(accs))

    def _conditional(self, n: tree_sitter.Node, acc: str) -> Optional[minmax.Conditional]:
        """The max/min written as a comparison that the assignment ``n`` to ``acc`` is part
        of: ``acc = (E > acc) ? E : acc`` itself, or the one statement of ``if (E > acc)
        acc = E;`` (``cudalens.optimizer.minmax``); else None."""
        p = self.p
        if n.type != "assignment_expression":
            return None
        found = minmax.match(n, p)
        if found is None:
            up = n.parent
            while up is not None and up.type in ("expression_statement", "compound_statement") \
                    and (up.type != "compound_statement" or len(named_children(up)) == 1):
                up = up.parent
            found = minmax.match(up, p) if up is not None and up.type == "if_statement" \
                else None
            if found is not None and found.target != n.child_by_field_name("left"):
                found = None
        if found is None or p.text_of(unparen(found.target)) != acc:
            return None
        return found

    def _reduction(self, n: tree_sitter.Node, acc: str) -> Optional[str]:
        p = self.p
        if n.type != "assignment_expression":
            return None
        cond = self._conditional(n, acc)
        if cond is not None:
            return cond.kind
        op = n.child_by_field_name("operator").type
        right = unparen(n.child_by_field_name("right"))
        mentions = lambda node: any(x.type == "identifier" and p.text_of(x) == acc
                                    for x in walk(node))
        if op == "+=":
            return None if mentions(right) else "+"
        if op != "=":
            return None
        if right.type == "binary_expression" and right.child_by_field_name("operator").type == "+":
            a, b = right.child_by_field_name("left"), right.child_by_field_name("right")
            for x, y in ((a, b), (b, a)):
                if p.text_of(unparen(x)) == acc and not mentions(y):
                    return "+"
        if right.type == "call_expression":
            fn = p.text_of(right.child_by_field_name("function"))
            args = named_children(right.child_by_field_name("arguments"))
            if fn in COMBINES and len(args) == 2:
                for x, y in ((args[0], args[1]), (args[1], args[0])):
                    if p.text_of(unparen(x)) == acc and not mentions(y):
                        return fn
        return None

    def _in_own_update(self, ident: tree_sitter.Node, acc: str) -> bool:
        """``ident`` is the accumulator's own mention in its update statement (for a max
        written as a comparison, anywhere in that ``if`` or conditional assignment)."""
        up = ident
        while up is not None and up.type != "for_statement":
            if up.type in ("if_statement", "assignment_expression"):
                found = minmax.match(up, self.p)
                if found is not None and self.p.text_of(unparen(found.target)) == acc:
                    return True
            up = up.parent
        cur = ident
        while cur is not None and cur.type != "assignment_expression":
            cur = cur.parent
        if cur is None or self._reduction(cur, acc) is None:
            return False
        left = unparen(cur.child_by_field_name("left"))
        if left == ident:
            return True
        right = unparen(cur.child_by_field_name("right"))
        if right.type == "binary_expression":
            return any(unparen(c) == ident for c in (right.child_by_field_name("left"),
                                                     right.child_by_field_name("right")))
        if right.type == "call_expression":
            return any(unparen(c) == ident
                       for c in named_children(right.child_by_field_name("arguments")))
        return False

    def _starts_at_zero(self, acc: str) -> bool:
        p = self.p
        for stmt in self.stmts:
            if stmt.type != "declaration":
                continue
            for d in stmt.children_by_field_name("declarator"):
                if d.type == "init_declarator" and \
                        p.text_of(d.child_by_field_name("declarator")) == acc:
                    return bool(_ZERO.match(p.text_of(d.child_by_field_name("value"))))
        return False

    def _buffers(self) -> None:
        """Written buffers only as ``alias[c]`` in loops, through one pointer."""
        p = self.p
        names = self.params | set(self.aliases)
        accesses: dict[str, list[tuple[tree_sitter.Node, bool, Optional[Poly], str]]] = {}
        for stmt in self.stmts:
            loop_var = None
            if stmt.type == "for_statement":
                loop_var = for_header(stmt, p).var
            for n in walk(stmt):
                if n.type != "identifier" or p.text_of(n) not in names:
                    continue
                parent = n.parent
                if parent is not None and parent.type in ("pointer_declarator", "init_declarator") \
                        and parent.child_by_field_name("declarator") == n:
                    continue  # the name being declared
                if stmt.type == "declaration" and self._is_alias_init(n):
                    continue
                if parent is None or parent.type != "subscript_expression" or \
                        parent.child_by_field_name("argument") != n:
                    raise _fail(f"'{_short(p, parent or n)}' (line {p.line_of(n)}) uses "
                                f"{p.text_of(n)} other than as {p.text_of(n)}[...]",
                                line=p.line_of(n))
                idx = named_children(parent.child_by_field_name("indices"))
                written = any(written_target(a) == parent for a in walk(stmt)
                              if a.type in ("assignment_expression", "update_expression"))
                word = p.text_of(n)
                base = self.aliases.get(word, word)
                accesses.setdefault(base, []).append(
                    (parent, written, self._column_offset(idx, loop_var), word))
        for base, uses in accesses.items():
            if not any(w for _, w, _, _ in uses):
                continue
            role = None
            try:
                decl = self.ctx.spec.param(base)
                role = decl.role if isinstance(decl, BufferDecl) else None
            except KeyError:
                pass
            if role == "in":
                raise _fail(f"the body writes {base}, which the spec calls in")
            spellings = {w for _, _, _, w in uses}
            stored = [node for node, _, _, _ in uses if any(
                r.start_byte <= node.start_byte < r.end_byte for r in self.row_stores)]
            if stored:
                # reads inside the per-row stores are lane 0's, in order with its writes
                # (``y[r] = y[r] * beta + y_sum;``, memory_acc's store)
                if len(stored) != len(uses) or not any(w for _, w, _, _ in uses):
                    raise _fail(f"{base} holds a per-row result (line {p.line_of(stored[0])}) "
                                f"and is also read or written by column", line=p.line_of(stored[0]))
                continue
            # every access at one offset R from the column (R = 0: alias[c]); else the first
            # access off the plain column is the one that lanes could share
            mixed = len({by_col for _, _, by_col, _ in uses}) > 1
            for node, _, by_col, _ in uses:
                if by_col is None or (mixed and by_col != Poly()):
                    raise _fail(f"{base} is written, and '{_short(p, node)}' (line "
                                f"{p.line_of(node)}) is not an access by the loop's column",
                                line=p.line_of(node))
            if len(spellings) > 1:
                raise _fail(f"{base} is written and reached through {', '.join(sorted(spellings))}"
                            f"; the pass needs one pointer")

    def _column_offset(self, idx: list, loop_var: Optional[str]) -> Optional[Poly]:
        """For the index of an access inside a loop over ``loop_var``: the offset ``R`` when
        the index is ``loop_var + R`` with ``R`` of the row index, scalar parameters and macros
        only (the same for every lane and trip: ``x[row * cols + c]``); else None."""
        if loop_var is None or len(idx) != 1:
            return None
        if self.p.text_of(unparen(idx[0])) == loop_var:
            return Poly()
        poly = poly_of(idx[0], self.p, self.scope)
        if poly is None:
            return None
        try:
            coef, rest = split_linear(poly, loop_var)
        except ValueError:
            return None
        scalars = {q.name for q in self.ctx.kernel.parameters if not q.is_pointer}
        free = {v for m, _ in rest.terms for v in m}
        if coef != Poly.const(1) or not free <= scalars | {self.index}:
            return None
        for stmt in self.stmts:  # a scalar the body changes is not the same on every trip
            for n in walk(stmt):
                t = written_target(n)
                if t is not None and t.type == "identifier" and self.p.text_of(t) in free:
                    return None
        return rest

    def _is_alias_init(self, ident: tree_sitter.Node) -> bool:
        cur = ident
        while cur is not None and cur.type != "init_declarator":
            cur = cur.parent
        if cur is None:
            return False
        value = cur.child_by_field_name("value")
        return value is not None and value.start_byte <= ident.start_byte < value.end_byte and \
            self._pointer_base(value) is not None


def _match(ctx: PassContext) -> _Match:
    parsed, body = readable_body_or(ctx, _fail)
    stmts = named_children(body)
    expected = "expected the body to start with 'int row = blockIdx.x * blockDim.x + threadIdx.x;'"
    if not stmts or stmts[0].type != "declaration":
        raise _fail(expected)
    decls = stmts[0].children_by_field_name("declarator")
    scope = Scope(macros=file_macros(parsed))
    if len(decls) != 1 or decls[0].type != "init_declarator" or \
            not is_global_index(poly_of(decls[0].child_by_field_name("value"), parsed, scope), "x"):
        raise _fail(f"{expected}, found '{_short(parsed, stmts[0])}' at line "
                    f"{parsed.line_of(stmts[0])}", line=parsed.line_of(stmts[0]))
    index = parsed.text_of(decls[0].child_by_field_name("declarator"))
    if len(stmts) < 2 or stmts[1].type != "if_statement" or \
            stmts[1].child_by_field_name("alternative") is not None:
        raise _fail(f"expected the guard 'if ({index} >= rows) return;' or 'if ({index} < rows) "
                    f"{{...}}' after the index")
    guard = stmts[1]
    cond = unparen(guard.child_by_field_name("condition"))
    consequence = guard.child_by_field_name("consequence")
    inner = consequence
    if inner.type == "compound_statement" and len(named_children(inner)) == 1:
        inner = named_children(inner)[0]
    exit_ = inner.type == "return_statement" and not named_children(inner)
    lt, gt = (">=", "<=") if exit_ else ("<", ">")
    bound = None
    if cond.type == "binary_expression":
        op = cond.child_by_field_name("operator").type
        left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
        if op == lt and parsed.text_of(unparen(left)) == index:
            bound = right
        elif op == gt and parsed.text_of(unparen(right)) == index:
            bound = left
    if bound is None:
        raise _fail(f"expected the guard 'if ({index} >= rows) return;' or 'if ({index} < rows) "
                    f"{{...}}', found 'if ({parsed.text_of(cond)})' at line {parsed.line_of(guard)}",
                    line=parsed.line_of(guard))
    if exit_:
        work = stmts[2:]
    else:
        if len(stmts) > 2:
            raise _fail(f"statements follow the guard at line {parsed.line_of(stmts[2])}",
                        line=parsed.line_of(stmts[2]))
        work = named_children(consequence) if consequence.type == "compound_statement" \
            else [consequence]
    for n in walk(body):
        t = written_target(n)
        if t is not None and t.type == "identifier" and parsed.text_of(t) == index:
            raise _fail(f"the body changes {index} (line {parsed.line_of(n)})",
                        line=parsed.line_of(n))
    analysis = _Analysis(ctx, parsed, work, index)
    loops = analysis.run()
    return _Match(parsed, index, decls[0].child_by_field_name("value"), stmts[0],
                  spec_text(bound, parsed, ctx, scope.macros), loops, tuple(analysis.row_stores),
                  guard, bound, exit_, tuple(work))


_SUM_TYPES = ("float", "double", "int", "unsigned", "unsigned int", "long", "long long",
              "unsigned long long", "size_t")


def _memory_sums(ctx: PassContext) -> PassContext:
    """``ctx`` with each per-row sum kept in memory moved into a local: a loop whose only
    mention of a pointer parameter ``y`` is one statement ``y[R] += E;`` (``R`` the same on
    every trip, ``E`` not reading ``y``; llm.c's and many SpMVs' ``y[row] += val[j] * x[...]``)
    becomes ``T y_sum = 0; for (...) { y_sum += E; } y[R] += y_sum;`` on the same lines, a
    local accumulator and a per-row store the pass knows. ``ctx`` itself when there is none."""
    try:
        parsed, body = readable_body(ctx)
    except UnreadableBody:
        return ctx
    pointers = {q.name: q for q in ctx.kernel.parameters if q.is_pointer}
    taken = set(file_identifiers(parsed))
    edits: list[Edit] = []
    for loop in walk(body):
        if loop.type != "for_statement" or loop.parent is None or \
                loop.parent.type != "compound_statement":
            continue
        head = for_header(loop, parsed)
        if head is None or head.body is None:
            continue
        for n in walk(head.body):
            if n.type != "assignment_expression" or n.child_by_field_name("operator").type != "+=":
                continue
            left = unparen(n.child_by_field_name("left"))
            stmt = n.parent
            if left.type != "subscript_expression" or stmt is None or \
                    stmt.type != "expression_statement":
                continue
            base = left.child_by_field_name("argument")
            word = parsed.text_of(base) if base is not None else ""
            if base is None or base.type != "identifier" or word not in pointers:
                continue
            index = named_children(left.child_by_field_name("indices"))
            changed = {parsed.text_of(t) for t in (written_target(a) for a in walk(loop))
                       if t is not None and t.type == "identifier"}
            mentions = [m for m in walk(loop) if m.type == "identifier" and
                        parsed.text_of(m) == word]
            ctype = " ".join(pointers[word].type.replace("*", " ").replace("const", " ")
                             .replace("__restrict__", " ").split())
            if len(index) != 1 or len(mentions) != 1 or ctype not in _SUM_TYPES or \
                    identifiers(index[0], parsed) & (changed | {head.var}):
                continue
            acc = fresh_name(f"{word}_sum", taken)
            taken.add(acc)
            edits += [Edit(loop.start_byte, loop.start_byte, f"{ctype} {acc} = 0; "),
                      Edit(left.start_byte, left.end_byte, acc),
                      Edit(loop.end_byte, loop.end_byte,
                           f" {word}[{parsed.text_of(index[0])}] += {acc};")]
            break  # one memory sum per loop
    if not edits:
        return ctx
    new = ctx.rewritten(apply_edits(parsed.data, edits), ctx.launch, "memory_sums")
    return dataclasses.replace(new, applied=ctx.applied)


def _blank(parsed: Parsed, node: tree_sitter.Node) -> Edit:
    """``node``'s text replaced by spaces, its line breaks kept (lines stay where they were)."""
    return Edit(node.start_byte, node.end_byte,
                re.sub(r"[^\n]", " ", parsed.text_of(node)).rstrip(" "))


def _spec_same(a: str, b: str) -> bool:
    return "".join(a.split()) == "".join(b.split())


def _lift(ctx: PassContext) -> tuple[PassContext, Optional[Reason]]:
    """``ctx`` with a block-per-row kernel (``cudalens.optimizer.block_rows``: the block's
    threads stride over row ``blockIdx.x``, their partial maxima and sums combined by trees in
    dynamic shared memory and read back from ``s[0]``) written as the one-thread-per-row
    kernel it computes, which the row passes then match: the row index becomes ``blockIdx.x *
    blockDim.x + threadIdx.x`` with the guard ``if (row >= N) return;`` (the kernel's own, or
    one on the scalar parameter the spec sets to the grid's row count), each block-stride loop
    runs from 0 by 1, each store ``s[tid] = acc;``, its barriers and its tree go, and every
    ``s[0]`` read after the tree is ``acc``, which after the loop holds the whole row's
    value; ``if (tid == 0) S`` becomes ``S``. Each tree must combine as its accumulator's loop
    does (a sum and a sum, a maximum and a maximum...), its accumulator accumulated in one
    block-stride loop before the store and not used after it otherwise. Lines stay where they
    were. ``ctx`` itself when the kernel is not such a kernel (the row passes then say why
    the one-thread-per-row form is not there), with the reason when the body is a block per
    row (``block_rows.match``) that cannot be read so."""
    from cudalens.optimizer import block_rows
    from cudalens.spec.model import ScalarDecl

    grid = ctx.launch.grid
    if any(spec_text_uses_block(g) for g in grid) or any(g.strip() != "1" for g in grid[1:]):
        return ctx, None
    try:
        p, body = readable_body(ctx)
        rows = block_rows.match(p, body)
    except block_rows.NotWarpRows as exc:  # a block per row whose shuffles are not read
        if not block_rows.strides(p, body):
            return ctx, None
        return ctx, Reason(str(exc), exc.line)
    except (UnreadableBody, block_rows.NotBlockRows):
        return ctx, None
    if (rows.shared is None or not rows.trees) and not rows.warps and not rows.levels:
        return ctx, None
    why = _warp_block_reason(ctx, rows)
    if why is not None:
        return ctx, why
    nested = [t for t, _, _ in rows.trees if t.parent != body]
    if nested:
        return ctx, Reason(f"the tree at line {p.line_of(nested[0])} is not a statement of the "
                           f"kernel's outer block", p.line_of(nested[0]))
    stmts = named_children(body)
    shared, tids, dims = rows.shared, rows.tids, rows.dims
    taken = set(file_identifiers(p))
    edits: list[Edit] = []
    index = None
    index_decl = None
    for stmt in stmts:  # int idx = blockIdx.x; (unchanged)
        if stmt.type != "declaration":
            continue
        ds = stmt.children_by_field_name("declarator")
        if len(ds) == 1 and ds[0].type == "init_declarator" and \
                "".join(p.text_of(strip_casts(ds[0].child_by_field_name("value"), p)).split()) \
                == "blockIdx.x":
            word = p.text_of(ds[0].child_by_field_name("declarator"))
            if word not in set(assigned_names(body, p)):
                index, index_decl = word, stmt
                break
    analysis = _Analysis(ctx, p, stmts, index or "")
    removed: set[tuple[int, int]] = set()
    for stmt in stmts:
        if stmt.type == "declaration":
            ds = stmt.children_by_field_name("declarator")
            names = {p.text_of(d.child_by_field_name("declarator")) for d in ds
                     if d.type == "init_declarator"}
            if any(c.type == "__shared__" for c in walk(stmt)) or \
                    (names and names <= tids | dims | rows.names and len(names) == len(ds)):
                removed.add((stmt.start_byte, stmt.end_byte))
        elif stmt.type == "expression_statement" and p.text_of(stmt).replace(" ", "") == \
                "__syncthreads();":
            removed.add((stmt.start_byte, stmt.end_byte))
    trees = {t.start_byte: (t, combine) for t, _, combine in rows.trees}
    current: Optional[str] = None  # the accumulator s[0] holds after its tree
    pending: Optional[tuple[str, tree_sitter.Node]] = None  # stored, its tree not yet run
    done: list[str] = []
    edits += [_blank(p, q) for q in rows.pragmas]  # the loops they unrolled are gone
    shuffles = {w.node.start_byte: w for w in rows.warps}
    shuffles.update({t.first.node.start_byte: t for t in rows.levels})
    for stmt in stmts:
        span = (stmt.start_byte, stmt.end_byte)
        if stmt.start_byte in shuffles:
            if pending is not None:
                return ctx, Reason(f"{pending[0]} is stored in {shared} but no tree combines "
                                   f"it before line {p.line_of(stmt)}", p.line_of(stmt))
            why = _lift_shuffle(analysis, rows, stmts, shuffles[stmt.start_byte], edits,
                                removed)
            if why is not None:
                return ctx, why
            current = None
            continue
        if stmt.start_byte in trees:
            tree, combine = trees[stmt.start_byte]
            if pending is None:
                return ctx, Reason(f"the tree at line {p.line_of(tree)} is not right after a "
                                   f"store '{shared}[tid] = acc;' of a loop's accumulator",
                                   p.line_of(tree))
            acc, loop = pending
            kinds = {k for l in [loop] for k in _loop_kinds(analysis, l, acc)}
            kind = kinds.pop() if len(kinds) == 1 else None
            if not _same_combine(kind, combine):
                return ctx, Reason(f"the tree at line {p.line_of(tree)} combines {acc} by "
                                   f"{minmax.label(combine)}, but the loop at line "
                                   f"{p.line_of(loop)} accumulates it "
                                   f"{'by ' + minmax.label(kind) if kind else 'otherwise'}",
                                   p.line_of(tree))
            removed.add(span)
            current, pending = acc, None
            done.append(acc)
            continue
        if span in removed:
            continue
        store = _slot_store(stmt, p, shared, tids)
        if store is not None:
            acc = store
            loops = [s for s in stmts if s.end_byte <= stmt.start_byte and
                     s in rows.strided and acc in identifiers(s, p)]
            if len(loops) != 1 or pending is not None:
                return ctx, Reason(f"{acc}, stored at line {p.line_of(stmt)}, is not "
                                   f"accumulated in one loop over the row before it",
                                   p.line_of(stmt))
            later = [n for s in stmts if s.start_byte > stmt.start_byte for n in walk(s)
                     if n.type == "identifier" and p.text_of(n) == acc]
            if later:
                return ctx, Reason(f"{acc} is used at line {p.line_of(later[0])} after it is "
                                   f"stored for the tree at line {p.line_of(stmt)} (each "
                                   f"thread's partial value)", p.line_of(later[0]))
            removed.add(span)
            pending, current = (acc, loops[0]), None
            continue
        for n in walk(stmt):
            if n.type == "subscript_expression" and \
                    p.text_of(n.child_by_field_name("argument")) == shared:
                if current is None or written_target(n.parent) == n:
                    return ctx, Reason(f"'{_short(p, n.parent)}' (line {p.line_of(n)}) "
                                       f"uses {shared} other than to read a tree's result "
                                       f"{shared}[0]", p.line_of(n))
                edits.append(Edit(n.start_byte, n.end_byte, current))
            elif n.type == "if_statement" and \
                    block_rows.zero_test(n.child_by_field_name("condition"), p, tids):
                if n.child_by_field_name("alternative") is not None:
                    return ctx, Reason(f"'if (tid == 0)' at line {p.line_of(n)} has an "
                                       f"else", p.line_of(n))
                cons = n.child_by_field_name("consequence")
                edits.append(Edit(n.start_byte, cons.start_byte,
                                  re.sub(r"[^\n]", " ", p.data[n.start_byte:cons.start_byte]
                                         .decode()).rstrip(" ") + " "))
                if cons.type == "compound_statement" and not any(
                        c.type == "declaration" for c in named_children(cons)):
                    # if (tid == 0) { S; }: the braces go too (nothing declared in them)
                    edits += [Edit(cons.start_byte, cons.start_byte + 1, " "),
                              Edit(cons.end_byte - 1, cons.end_byte, " ")]
    if pending is not None:
        return ctx, Reason(f"{pending[0]} is stored in {shared} but no tree combines it")
    for loop in rows.strided:
        head = for_header(loop, p)
        edits += [Edit(head.start.start_byte, head.start.end_byte, "0"),
                  Edit(head.update.start_byte, head.update.end_byte, f"++{head.var}")]
    # the row count: the kernel's guard, else a scalar the spec sets to the grid
    bound = next((q.name for q in ctx.spec.params if isinstance(q, ScalarDecl) and
                  _spec_same(q.expr, grid[0])), None)
    row = index or fresh_name("row", taken)
    first = next((s for s in stmts if (s.start_byte, s.end_byte) not in removed and
                  s != index_decl), None)
    guarded = first is not None and first.type == "if_statement" and \
        re.fullmatch(rf"if\(\(?{re.escape(row)}\)?>=\w+\)return;",
                     re.sub(r"\s", "", p.text_of(first))) is not None
    if not guarded and bound is None:
        return ctx, Reason(f"no guard 'if ({row} >= rows) return;' and no scalar parameter "
                           f"the spec sets to the grid's row count ({grid[0]}): the rows of "
                           f"a warp per row need their count")
    guard = "" if guarded else f" if ({row} >= {bound}) return;"
    value = None
    lead = {}  # removed statement -> the text on its first line
    if index_decl is not None:
        value = index_decl.children_by_field_name("declarator")[0].child_by_field_name("value")
        edits.append(Edit(value.start_byte, value.end_byte, "blockIdx.x * blockDim.x + "
                                                            "threadIdx.x"))
        after = stmts.index(index_decl) + 1
        nxt = (stmts[after].start_byte, stmts[after].end_byte) if after < len(stmts) else None
        if guard and nxt in removed and p.data[index_decl.end_byte:nxt[0]].count(b"\n") == 1:
            lead[nxt] = guard.strip()  # on the line of the statement after the index
        else:
            edits.append(Edit(index_decl.end_byte, index_decl.end_byte, guard))
        if first is not None and first.start_byte < index_decl.start_byte:
            return ctx, Reason(f"'{_short(p, first)}' (line {p.line_of(first)}) comes "
                               f"before the row index {index}", p.line_of(first))
    elif stmts:
        declared = f"int {row} = blockIdx.x * blockDim.x + threadIdx.x;{guard}"
        span = (stmts[0].start_byte, stmts[0].end_byte)
        if span in removed:  # the index takes the removed statement's place
            lead[span] = declared
        else:
            edits.append(Edit(span[0], span[0], declared + " "))
    for n in walk(body):
        if n.type == "field_expression" and builtin_field(n, p) == "blockIdx.x" and \
                (value is None or not value.start_byte <= n.start_byte < value.end_byte):
            edits.append(Edit(n.start_byte, n.end_byte, row))
    for a, b in removed:  # each line of the statement a marker the rewrite drops (GONE)
        lines = p.data[a:b].decode().count("\n") + 1
        text = "\n".join([lead.get((a, b), GONE)] + [GONE] * (lines - 1))
        edits.append(Edit(a, b, text))
    try:
        text = apply_edits(p.data, edits)
    except ValueError:
        return ctx, Reason("the edits of the one-thread-per-row form overlap")
    launch = dataclasses.replace(ctx.launch, shared="0")
    new = ctx.rewritten(text, launch, "block_rows")
    return dataclasses.replace(new, applied=ctx.applied), None


def _warp_block_reason(ctx: PassContext, rows) -> Optional[Reason]:
    """Why the spec's block does not let ``rows``' warp reductions combine the whole block
    (``cudalens.optimizer.warp_shuffle``): a lone one needs a block of 32 threads, a
    two-level one a multiple of 32 up to 1024; None when it does."""
    from cudalens.optimizer.passes.launch_config import baseline_block

    if not rows.warps and not rows.levels and rows.one_warp is None:
        return None
    base = baseline_block(ctx)
    block = base[0] if base is not None else None
    if rows.one_warp is not None and block != 32:
        line, what = rows.one_warp
        return Reason(f"the kernel {what} (line {line}), which combines the row only in a "
                      f"block of 32 threads; the spec's block is {ctx.launch.block[0]}", line)
    if rows.levels and (block is None or block % 32 or block > 1024):
        line = rows.levels[0].first.line
        return Reason(f"the two-level reduction at line {line} combines the row only in a "
                      f"block of a multiple of 32 threads up to 1024; the spec's block is "
                      f"{ctx.launch.block[0]}", line)
    return None


def _lift_shuffle(analysis: "_Analysis", rows, stmts, red, edits: list[Edit],
                  removed: set) -> Optional[Reason]:
    """The edits that read a warp reduction or a two-level one (``red``) as the row's value
    each thread of the one-thread-per-row form already holds after its loop: the statements
    go, and ``T r = H(acc);`` / ``T b = ... ? sh[lane] : 0;`` become ``T r = acc;``. Its
    accumulator must be accumulated in one block-stride loop before it, combining as the
    reduction does, and not used in between; else the reason."""
    from cudalens.optimizer import warp_shuffle

    p = analysis.p
    first = red if isinstance(red, warp_shuffle.WarpReduce) else red.first
    acc, line = first.acc, first.line
    before = [s for s in stmts if s.end_byte <= first.node.start_byte]
    loops = [s for s in before if s in rows.strided and acc in identifiers(s, p)]
    if len(loops) != 1:
        return Reason(f"{acc}, combined across the warp at line {line}, is not accumulated in "
                      f"one loop over the row before it", line)
    kinds = _loop_kinds(analysis, loops[0], acc)
    kind = kinds.pop() if len(kinds) == 1 else None
    if not _same_combine(kind, first.combine):
        return Reason(f"the warp reduction at line {line} combines {acc} by "
                      f"{minmax.label(first.combine)}, but the loop at line "
                      f"{p.line_of(loops[0])} accumulates it "
                      f"{'by ' + minmax.label(kind) if kind else 'otherwise'}", line)
    between = [n for s in before if s.start_byte >= loops[0].end_byte for n in walk(s)
               if n.type == "identifier" and p.text_of(n) == acc]
    if between:
        return Reason(f"{acc} is used at line {p.line_of(between[0])} between its loop and "
                      f"the warp reduction at line {line}", p.line_of(between[0]))

    def one(w: "warp_shuffle.WarpReduce", source: str) -> None:
        if w.declares or w.result != source:
            edits.append(Edit(w.call.start_byte, w.call.end_byte, source))
        else:
            removed.add((w.node.start_byte, w.node.end_byte))

    if isinstance(red, warp_shuffle.WarpReduce):
        one(red, acc)
        return None
    one(red.first, acc)
    removed.add((red.store.start_byte, red.store.end_byte))
    removed.add((red.barrier.start_byte, red.barrier.end_byte))
    target = red.second.acc
    if target == red.first.result and not red.load_declares:
        removed.add((red.load.start_byte, red.load.end_byte))
    else:
        init = next(n for n in walk(red.load) if n.type == "conditional_expression")
        while init.parent is not None and init.parent.type == "parenthesized_expression":
            init = init.parent
        edits.append(Edit(init.start_byte, init.end_byte, red.first.result))
    one(red.second, target)
    return None


def block_rows_reason(ctx: PassContext) -> Optional[Reason]:
    """Why a block-per-row kernel (``cudalens.optimizer.block_rows``) cannot be read as one
    thread per row (``_lift``); None when it can or the kernel is not one."""
    return _lift(ctx)[1]


def _block_rows(ctx: PassContext) -> PassContext:
    """``ctx`` with a block-per-row kernel written as one thread per row (``_lift``), else
    ``ctx`` itself."""
    return _lift(ctx)[0]




def spec_text_uses_block(text: str) -> bool:
    from cudalens.spec import expr as spec_expr

    return spec_expr.BLOCK in spec_expr.names_in(text)


def _slot_store(stmt: tree_sitter.Node, p: Parsed, shared: str, tids) -> Optional[str]:
    """``acc`` of the statement ``s[tid] = acc;``, else None."""
    if stmt.type != "expression_statement" or len(named_children(stmt)) != 1:
        return None
    e = named_children(stmt)[0]
    if e.type != "assignment_expression" or e.child_by_field_name("operator").type != "=":
        return None
    left, right = unparen(e.child_by_field_name("left")), unparen(e.child_by_field_name("right"))
    if left.type != "subscript_expression" or \
            p.text_of(left.child_by_field_name("argument")) != shared or \
            right.type != "identifier":
        return None
    idx = named_children(left.child_by_field_name("indices"))
    tid = strip_casts(idx[0], p) if len(idx) == 1 else None
    if tid is None or not (p.text_of(tid) in tids or
                           "".join(p.text_of(tid).split()) == "threadIdx.x"):
        return None
    return p.text_of(right)


def _loop_kinds(analysis: "_Analysis", loop: tree_sitter.Node, acc: str) -> set:
    """How ``loop`` changes ``acc``: the kinds of ``_Analysis._reduction`` (None for a change
    that is not a reduction)."""
    kinds = set()
    for n in walk(loop):
        t = written_target(n)
        if t is not None and t.type == "identifier" and analysis.p.text_of(t) == acc:
            kinds.add(analysis._reduction(n, acc) if n.type == "assignment_expression" else None)
    return kinds


def _same_combine(a: Optional[str], b: str) -> bool:
    """The loop's kind ``a`` and the tree's ``b`` combine alike: both sums, both maxima or
    both minima (``cudalens.optimizer.minmax``)."""
    if a is None:
        return False
    if a == "+" or b == "+":
        return a == b
    return (minmax.is_max(a) and minmax.is_max(b)) or (minmax.is_min(a) and minmax.is_min(b))


def normalize(ctx: PassContext) -> PassContext:
    """What both row passes match and rewrite: ``ctx`` with a block-per-row kernel written as
    one thread per row (``_block_rows``), its integer locals of parameters folded
    (``bound_locals.fold``) and its per-row sums in memory moved into locals
    (``memory_acc.local``, reassociated: ``y[i] = 0; for (...) y[i] += E;``, then
    ``_memory_sums`` for what remains)."""
    return normalize_with_reason(ctx)[0]


def normalize_with_reason(ctx: PassContext) -> tuple[PassContext, Optional[str]]:
    """``normalize``'s context, and the reason (with its line) when a loop accumulates into
    memory in a way a register could change (``memory_acc.local``), else None."""
    ctx, why = memory_acc.local(bound_locals.fold(_block_rows(ctx)), ordered=False)
    return _memory_sums(ctx), why


def _plan(ctx: PassContext) -> tuple[Optional[str], Optional[_Match]]:
    return structural.plan(ctx, _early(ctx), _match, NoMatch)


def _early(ctx: PassContext) -> Optional[str]:
    body = ctx.text[ctx.kernel.body_start_byte:ctx.kernel.body_end_byte]
    if re.search(r"\b(threadIdx|blockIdx|blockDim)\s*\.\s*[yz]\b", body):
        return "the kernel indexes along y or z; the pass rewrites 1D row kernels"
    if ctx.spec.atomics:
        return "the spec marks the kernel as using atomics"
    if any(b.strip() != "1" for b in ctx.launch.block[1:]):
        return f"the spec's block ({', '.join(ctx.launch.block)}) is not 1D"
    from cudalens.optimizer.passes import column_reduce  # its pattern: loads already coalesced
    if column_reduce.check(ctx) is None:
        return ("each thread walks a column of a row-major matrix, its loads already "
                "coalesced; a warp per column would read addresses a row apart "
                "(column_reduce splits the rows instead)")
    return None


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel gives each thread a row the pass can spread over a warp (or a
    block a row, read as one thread per row: ``_lift``, whose reason comes first)."""
    why = block_rows_reason(ctx)
    if why is not None:
        return why
    ctx, why = normalize_with_reason(ctx)
    return why if why is not None else _plan(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """One application per block size in warps, 4 warps (128 threads) first; then the same
    in the grid-stride form (rows looped over, correct under any launch) where the kernel
    allows it (no ``return`` after the guard)."""
    ctx = normalize(ctx)
    plain = tuple({"warps_per_block": w} for w in WARPS_PER_BLOCK)
    reason, m = _plan(ctx)
    if reason is not None:
        return plain
    if online_pair(m) is not None:  # single-pass online softmax, after the plain form
        plain += tuple({"warps_per_block": w, "online": True} for w in WARPS_PER_BLOCK)
    if _gridstride_blocker(m) is not None:
        return plain
    return plain + tuple({**d, "gridstride": True} for d in plain)


def apply(ctx: PassContext, warps_per_block: int = 4, gridstride: bool = False,
          online: bool = False) -> PassResult:
    """The warp-per-row kernel. ``gridstride``: the warps loop over the rows
    (``for (row = warp; row < rows; row += warps in the grid)``), so that any launch whose
    block is a multiple of 32 threads covers every row, the user's original one included.

    Raises:
        PassNotApplicable: the precondition fails (the message says why).
        ValueError: ``warps_per_block`` is not one of ``WARPS_PER_BLOCK``.
    """
    from_blocks = _block_rows(ctx) is not ctx
    ctx = normalize(ctx)
    if warps_per_block not in WARPS_PER_BLOCK:
        raise ValueError(f"warps_per_block must be one of {WARPS_PER_BLOCK}, found "
                         f"{warps_per_block!r}")
    reason, m = _plan(ctx)
    if reason is not None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    p = m.parsed
    taken = set(file_identifiers(p)) | {ctx.kernel.name}
    if online:
        return _online(ctx, m, warps_per_block, gridstride, taken, from_blocks)
    lane, off = fresh_name("lane", taken), fresh_name("offset", taken)
    indent = line_indent(p.data, m.index_decl.start_byte)
    shuffled = any(loop.accumulators for loop in m.loops)
    if gridstride:
        blocker = _gridstride_blocker(m)
        if blocker is not None:
            raise PassNotApplicable(f"{name} (grid-stride) on {ctx.kernel.name}: {blocker}")
        edits = _gridstride_edits(m, lane, indent, shuffled)
    else:
        edits = [
            Edit(m.index_decl.start_byte, m.index_decl.start_byte,
                 f"{comment(m.index, False, shuffled, indent)}\n{indent}"),
            Edit(m.index_value.start_byte, m.index_value.end_byte,
                 f"(blockIdx.x * blockDim.x + threadIdx.x) / {WARP}u"),
            Edit(m.index_decl.end_byte, m.index_decl.end_byte,
                 f"\n{indent}const unsigned int {lane} = threadIdx.x % {WARP}u;"),
        ]
    accumulated = []
    for loop in m.loops:
        start = p.text_of(loop.start).strip()
        edits.append(Edit(loop.start.start_byte, loop.start.end_byte,
                          lane if start == "0" else f"({start}) + {lane}"))
        edits.append(Edit(loop.update.start_byte, loop.update.end_byte, f"{loop.var} += {WARP}"))
        if loop.accumulators:
            li = line_indent(p.data, loop.node.start_byte)
            lines = [f"for (int {off} = {WARP // 2}; {off} > 0; {off} /= 2) {{"]
            for acc, kind in loop.accumulators:
                temp = (_decl_type(m, acc) or "float", fresh_name(f"{acc}_other", taken)) \
                    if minmax.is_conditional(kind) else None
                lines += [f"    {x}" for x in minmax.combine_lines(
                    acc, kind, f"__shfl_xor_sync(0xffffffffu, {acc}, {off})", temp)]
                accumulated.append(acc)
            lines.append("}")
            text = "".join(f"\n{li}{l}" for l in lines)
            edits.append(Edit(loop.node.end_byte, loop.node.end_byte, text))
    for stmt in m.row_stores:
        edits.append(Edit(stmt.start_byte, stmt.start_byte, f"if ({lane} == 0) "))
    source = _reindent(apply_edits(p.data, edits))
    launch = dataclasses.replace(ctx.launch, block=(str(WARP * warps_per_block),),
                                 grid=(f"ceil_div({m.bound_spec}, {warps_per_block})",))
    sums = any(k == "+" for l in m.loops for _, k in l.accumulators)
    order = (" (sums are added in a different order: results may differ in the last bits, "
             "within the tolerance the runner checks)" if sums else "")
    order += conditional_note(m)
    combined = (f"; {', '.join(accumulated)} combined across the warp with 5 __shfl_xor_sync "
                f"steps" if accumulated else "")
    stores = (f"; lane 0 stores the per-{m.index} result{'s' if len(m.row_stores) > 1 else ''}"
              if m.row_stores else "")
    explanation = (f"one warp per {m.index} instead of one thread: the 32 lanes read 32 "
                   f"consecutive elements of the {m.index} (coalesced 128-byte requests "
                   f"instead of 32 sectors a {m.index} apart), and the grid runs 32x the "
                   f"threads{combined}{stores}; block {WARP * warps_per_block}{order}")
    if from_blocks:
        explanation = (f"one warp per {m.index} instead of one block: each {m.index}'s "
                       f"partial results are combined across its warp with __shfl_xor_sync "
                       f"({', '.join(accumulated)}, 5 steps each) instead of trees in shared "
                       f"memory with a barrier per step, and a block of "
                       f"{WARP * warps_per_block} threads takes {warps_per_block} "
                       f"{m.index}s{stores}{order}")
    if gridstride:
        explanation += (f"; the warps loop over the {m.index}s (grid-stride), so the kernel is "
                        f"also correct under any launch whose block is a multiple of 32 "
                        f"threads, the original one included")
    return PassResult(source=source, launch=launch,
                      tags=("warp-per-row" + ("+gridstride" if gridstride else ""),
                            f"block={WARP * warps_per_block}"),
                      explanation=explanation)


def conditional_note(m: _Match) -> str:
    """`` (NaN caveat)`` when a loop accumulates a max/min written as a comparison
    (``cudalens.optimizer.minmax``), else ""."""
    if any(minmax.is_conditional(k) for l in m.loops for _, k in l.accumulators):
        return f" ({minmax.NAN_CAVEAT})"
    return ""


def _online(ctx: PassContext, m: _Match, warps_per_block: int, gridstride: bool,
            taken: set, from_blocks: bool = False) -> PassResult:
    """The warp-per-row kernel with the max and sum-of-exponentials loops fused
    (``cudalens.optimizer.row_group.online_pair``, online softmax)."""
    source, o = rewrite(ctx, m, "warp", True, gridstride, taken, name)
    launch = dataclasses.replace(ctx.launch, block=(str(WARP * warps_per_block),),
                                 grid=(f"ceil_div({m.bound_spec}, {warps_per_block})",))
    was = ("one block (warp shuffles instead of trees in shared memory)" if from_blocks
           else "one thread (coalesced reads, 32x the threads)")
    explanation = (f"one warp per {m.index} instead of {was}; {o.m} and {o.s} in one pass over the {m.index} (online softmax: "
                   f"the sum is rescaled when the running maximum grows; Milakov & Gimelshein "
                   f"2018), so the {m.index} is read twice instead of three times; partial "
                   f"results merged across the warp with __shfl_xor_sync; block "
                   f"{WARP * warps_per_block} (sums are added in a different order: results "
                   f"may differ in the last bits, within the tolerance the runner checks)"
                   f"{conditional_note(m)}")
    if gridstride:
        explanation += (f"; the warps loop over the {m.index}s (grid-stride), so the kernel is "
                        f"also correct under any launch whose block is a multiple of 32 threads")
    return PassResult(source=source, launch=launch,
                      tags=("warp-per-row+online" + ("+gridstride" if gridstride else ""),
                            f"block={WARP * warps_per_block}"), explanation=explanation)


def comment(index: str, gridstride: bool, shuffled: bool, indent: str = "") -> str:
    """The one comment the rewrite adds, above the index: what changed and why, e.g.
    ``// One warp per row: lane L reads columns L, L + 32, ... (coalesced), combined with
    shuffles.`` (the shuffle clause only when a loop accumulates). The grid-stride form says
    that the warps loop over the rows, so any launch covers them. Wrapped onto a second
    ``//`` line (at ``indent``) where one line would pass 100 columns."""
    loop = f", the warps looping over the {index}s (any launch covers them)" if gridstride else ""
    combine = ", combined with shuffles" if shuffled else ""
    text = (f"One warp per {index}{loop}: lane L reads columns L, L + {WARP}, ... "
            f"(coalesced){combine}.")
    words, lines = text.split(" "), [""]
    for word in words:
        if lines[-1] and len(indent) + 3 + len(lines[-1]) + 1 + len(word) > 100:
            lines.append("")
        lines[-1] = f"{lines[-1]} {word}" if lines[-1] else word
    return f"\n{indent}".join(f"// {line}" for line in lines)


def _gridstride_edits(m: _Match, lane: str, indent: str, shuffled: bool) -> list[Edit]:
    """The index declaration and the guard become a loop over the rows, one warp per row per
    trip; with an exit guard the statements after it become the loop's body (indented by
    ``_reindent``)."""
    p = m.parsed
    type_node = m.index_decl.child_by_field_name("type")
    ctype = p.text_of(type_node) if type_node is not None else "int"
    bound = p.text_of(m.bound)
    header = (f"{comment(m.index, True, shuffled, indent)}\n{indent}"
              f"const unsigned int {lane} = threadIdx.x % {WARP}u;\n{indent}"
              f"for ({ctype} {m.index} = (blockIdx.x * blockDim.x + threadIdx.x) / {WARP}u; "
              f"{m.index} < {bound}; {m.index} += (gridDim.x * blockDim.x) / {WARP}u)")
    if not m.exit_guard:
        consequence = m.guard.child_by_field_name("consequence")
        return [Edit(m.index_decl.start_byte, consequence.start_byte, header + " ")]
    last = m.work[-1].end_byte if m.work else m.guard.end_byte
    return [Edit(m.index_decl.start_byte, m.guard.end_byte, header + " {" + _BEGIN),
            Edit(last, last, _END + f"\n{indent}}}")]
