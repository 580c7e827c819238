"""Pass ``column_reduce``: a thread-per-column reduction over the rows of a row-major matrix
split over a block tile of columns x row groups.

The pattern (index spelling, index type, guard form and names free)::

    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {                          // or: if (c >= cols) return;
        float acc = 0.0f;                    // the combine's identity
        for (int r = 0; r < rows; ++r)
            acc += EXPR;                     // or acc = acc + EXPR, acc = fmaxf(acc, EXPR)
        ...statements using acc...           // out[c] = acc; out[c] = acc / rows; ...
    }

where EXPR is pure (loads, arithmetic, pure math calls) and every load in it moves by one
element when ``c`` does (``a[r * cols + c]``: neighbouring threads read neighbouring
addresses, so each row's reads are coalesced). Such a kernel has only ``cols`` threads, each
walking all ``rows`` serially: for a few thousand columns a handful of SMs do all the work
with one load in flight per thread.

The rewrite launches blocks of ``CX x TY`` threads over ``ceil_div(cols, CX)`` blocks:
thread ``(x, y)`` combines rows ``y, y + TY, ...`` of its column (each warp still reads
whole 32-byte sectors of a row), the ``TY`` partial results of a column are combined in a
shared-memory tree, and the thread of row group 0 runs the original's statements after the
loop with the combined value (CUDA C++ Best Practices Guide, "Coalesced Access to Global
Memory" and "Shared Memory"). The output is written exactly where and as the original writes
it. Float sums are added in another order (within the runner's tolerance).

Parameters: ``tile`` (``(CX, TY)``: columns and row groups per block).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.optimizer import bound_locals, elementwise, memory_acc, minmax, structural
from cudalens.optimizer.affine import Scope, poly_of, split_linear
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.hist_match import global_index
from cudalens.optimizer.index2d import counter_only
from cudalens.optimizer.macros import file_macros
from cudalens.optimizer.passes.launch_config import baseline_block
from cudalens.optimizer.pointer_uses import pointer_uses
from cudalens.optimizer.reasons import LocatedError, reason_of
from cudalens.kernel_model.loops import for_header
from cudalens.kernel_model.model import readable_body_or
from cudalens.kernel_model.syntax import Parsed, named_children, unparen, walk
from cudalens.kernel_model.syntax import short_text as _short

name = "column_reduce"

TILES: tuple[tuple[int, int], ...] = ((32, 8), (32, 32), (16, 32), (8, 32), (8, 128))
_FUNCS = ("fmaxf", "fminf", "fmax", "fmin", "max", "min")
_IDENTITY = {"+": ("0", "0.0", "0.0f", "0.f", "0.", "0u"),
             "max": ("-INFINITY", "-FLT_MAX", "-DBL_MAX", "-HUGE_VALF"),
             "min": ("INFINITY", "FLT_MAX", "DBL_MAX", "HUGE_VALF")}


def _ordinal(n: int) -> str:
    """``8`` -> ``"8th"``, ``32`` -> ``"32nd"``, ``1`` -> ``"1st"`` (English ordinals, for the
    explanation and the rewrite's comment)."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class NotColumnReduction(LocatedError):
    """The kernel is not the recognized column reduction; the message says why, with the line."""


@dataclass(frozen=True)
class ColumnReduction:
    """A matched kernel: ``index``/``index_type`` the column index, ``bound`` the guard's
    bound (C) and ``bound_spec`` (spec); ``acc_decl`` the accumulator's declaration, ``acc``
    its name and ``acc_type`` its type; ``loop`` the row loop (``row`` its variable, ``rows``
    its bound node); ``combine`` ``"+"`` or a function name; ``after`` the statements after
    the loop."""

    parsed: Parsed
    index: str
    index_type: str
    index_init: str
    bound: str
    bound_spec: str
    acc_decl: tree_sitter.Node
    acc: str
    acc_type: str
    loop: tree_sitter.Node
    row: str
    rows: tree_sitter.Node
    combine: str
    after: tuple[tree_sitter.Node, ...]


def _fail(msg: str, line: Optional[int] = None) -> NotColumnReduction:
    return NotColumnReduction(msg, line)


def _kind(combine: str) -> str:
    """``"max"`` or ``"min"`` for a function name or a conditional kind of
    ``cudalens.optimizer.minmax``."""
    return "max" if minmax.is_max(combine) else "min"


def _combine(stmt: tree_sitter.Node, p: Parsed, acc: str) -> tuple[str, tree_sitter.Node,
                                                                  tree_sitter.Node]:
    """(combine, EXPR, the assignment) of ``acc += EXPR;``, ``acc = acc + EXPR;``, ``acc =
    f(acc, EXPR);``, or of a max/min written as a comparison (``if (EXPR > acc) acc = EXPR;``,
    ``acc = (EXPR > acc) ? EXPR : acc;``: ``cudalens.optimizer.minmax``, whose kind is then the
    combine)."""
    while stmt.type == "compound_statement" and len(named_children(stmt)) == 1:
        stmt = named_children(stmt)[0]
    bad = _fail(f"expected the loop body to be '{acc} += ...;' (or {acc} = {acc} + ..., "
                f"{acc} = fmaxf({acc}, ...), if (... > {acc}) {acc} = ...;), found "
                f"'{_short(p, stmt)}' at line {p.line_of(stmt)}", line=p.line_of(stmt))
    cond = minmax.match(stmt, p)
    if cond is not None:
        if p.text_of(unparen(cond.target)) != acc:
            raise bad
        assign = cond.target.parent  # the assignment ``acc = ...`` (in the if, or the ternary)
        return cond.kind, cond.value, assign
    if stmt.type != "expression_statement" or not named_children(stmt):
        raise bad
    e = named_children(stmt)[0]
    if e.type != "assignment_expression" or p.text_of(unparen(e.child_by_field_name("left"))) != acc:
        raise bad
    op = e.child_by_field_name("operator").type
    right = unparen(e.child_by_field_name("right"))
    if op == "+=":
        return "+", right, e
    if op != "=":
        raise bad
    if right.type == "binary_expression" and right.child_by_field_name("operator").type == "+":
        a, b = right.child_by_field_name("left"), right.child_by_field_name("right")
        if p.text_of(unparen(a)) == acc:
            return "+", b, e
        if p.text_of(unparen(b)) == acc:
            return "+", a, e
    if right.type == "call_expression":
        fn = p.text_of(right.child_by_field_name("function"))
        args = named_children(right.child_by_field_name("arguments"))
        if fn in _FUNCS and len(args) == 2:
            if p.text_of(unparen(args[0])) == acc:
                return fn, args[1], e
            if p.text_of(unparen(args[1])) == acc:
                return fn, args[0], e
    raise bad


def match(ctx: PassContext) -> ColumnReduction:
    """Matches ``ctx``'s kernel (module doc). Raises ``NotColumnReduction`` with the reason."""
    p, body = readable_body_or(ctx, _fail)
    if re.search(r"\b(threadIdx|blockIdx|blockDim|gridDim)\s*\.\s*[yz]\b", p.text_of(body)):
        raise _fail("the kernel indexes along y or z; the pass rewrites a 1D grid of columns")
    if any(n.type == "__shared__" for n in walk(body)):
        raise _fail("the kernel already uses __shared__ memory")
    block = baseline_block(ctx)
    if block is None:
        raise _fail("the spec's block cannot be evaluated")
    stmts = named_children(body)
    if not stmts:
        raise _fail("the kernel's body is empty")
    try:
        index, index_type, init_node = global_index(stmts[0], p, block[0])
        if elementwise._is_global_index(init_node, p):
            index_init = p.text_of(init_node)  # the user's spelling, casts included
        else:  # a constant for blockDim.x: the new block differs
            wide = index_type not in ("int", "unsigned", "unsigned int")
            index_init = (f"({index_type})" if wide else "") + \
                "blockIdx.x * blockDim.x + threadIdx.x"
        while len(stmts) > 2 and counter_only(stmts[1], stmts[2:], p):
            stmts = [stmts[0]] + stmts[2:]  # ``int r;`` before the guard, for ``for (r = 0;``
        if len(stmts) < 2:
            raise _fail(f"expected a bounds guard after line {p.line_of(stmts[0])}",
                        line=p.line_of(stmts[0]))
        form, bound_node = elementwise._guard(stmts[1], p, index)
        bound_spec = elementwise._bound_spec(bound_node, p, ctx)
        guarded = elementwise.guarded(stmts, form, p)
    except elementwise.NotElementwise as exc:
        raise _fail(str(exc), exc.line) from None
    # a row counter declared before its loop (``int r; ... for (r = 0; ...)``, ``for_header``'s
    # ``declared``) is the loop's own: the rewrite declares it in its loops
    for st in guarded:
        h = for_header(st, p) if st.type == "for_statement" else None
        if h is not None and h.declared is not None:
            guarded = [g for g in guarded if g.id != h.declared.id]
    if len(guarded) < 3 or guarded[0].type != "declaration" or guarded[1].type != "for_statement":
        shown = _short(p, guarded[0]) if guarded else "nothing"
        line = p.line_of(guarded[0]) if guarded else p.line_of(stmts[1])
        raise _fail(f"expected the accumulator's declaration, the loop over rows and the "
                    f"statements using the result under the guard, found '{shown}' at line "
                    f"{line}", line=line)
    decl, loop, after = guarded[0], guarded[1], guarded[2:]
    ds = decl.children_by_field_name("declarator")
    if len(ds) != 1 or ds[0].type != "init_declarator":
        raise _fail(f"expected one initialized accumulator, found '{_short(p, decl)}' at line "
                    f"{p.line_of(decl)}", line=p.line_of(decl))
    acc = p.text_of(ds[0].child_by_field_name("declarator"))
    init = p.text_of(unparen(ds[0].child_by_field_name("value")))
    acc_type = " ".join(w for w in p.text_of(decl.child_by_field_name("type")).split())
    head = for_header(loop, p)
    if head is None or head.body is None:
        raise _fail(f"the loop at line {p.line_of(loop)} is not 'for (int r = 0; r < rows; "
                    f"++r)'", line=p.line_of(loop))
    rows = None
    cond = head.cond
    if cond.type == "binary_expression" and cond.child_by_field_name("operator").type == "<" \
            and p.text_of(unparen(cond.child_by_field_name("left"))) == head.var:
        rows = cond.child_by_field_name("right")
    upd = " ".join(p.text_of(head.update).split())
    r = head.var
    if p.text_of(unparen(head.start)) != "0" or rows is None or \
            upd not in (f"++{r}", f"{r}++", f"{r} += 1", f"{r} = {r} + 1"):
        raise _fail(f"the loop at line {p.line_of(loop)} is not 'for (... {r} = 0; {r} < rows; "
                    f"++{r})'", line=p.line_of(loop))
    combine, expr, assign = _combine(head.body, p, acc)
    kind = "+" if combine == "+" else _kind(combine)
    if init not in _IDENTITY[kind]:
        raise _fail(f"the accumulator starts at '{init}' (line {p.line_of(decl)}), not the "
                    f"identity of the combine ({_IDENTITY[kind][0]})", line=p.line_of(decl))
    for n in walk(head.body):
        if n.type in ("assignment_expression", "update_expression") and n != assign:
            raise _fail(f"the loop body assigns '{_short(p, n)}' (line {p.line_of(n)})",
                        line=p.line_of(n))
        if n.type == "identifier" and p.text_of(n) in (acc,) and \
                expr.start_byte <= n.start_byte < expr.end_byte:
            raise _fail(f"the value combined reads {acc} (line {p.line_of(n)})",
                        line=p.line_of(n))
    impure = structural.impure_call(expr, p, file_macros(p))
    if impure:
        raise _fail(f"the value combined calls {impure}")
    tied = structural.builtin_uses(expr, p) or structural.builtin_uses(rows, p)
    if tied:
        raise _fail(f"the loop uses {tied}")
    pointers = {q.name for q in ctx.kernel.parameters if q.is_pointer}
    scope = Scope(macros=file_macros(p))
    for use in pointer_uses(expr, p, pointers):
        if use.kind != "read" or use.form != "subscript":
            raise _fail(f"'{use.text}' (line {use.line}) is not a load of an element",
                        line=use.line)
        poly = poly_of(use.index, p, scope)
        try:
            coef, _ = split_linear(poly, index) if poly is not None else (None, None)
        except ValueError:
            coef = None
        if coef is None or not coef.is_const() or coef.constant not in (0, 1):
            raise _fail(f"'{use.text}' (line {use.line}) does not move by one element with "
                        f"{index} (nor stays): neighbouring threads do not read neighbouring addresses "
                        f"(a thread reading a contiguous run is warp_per_row's pattern)",
                        line=use.line)
    for stmt in after:
        for n in walk(stmt):
            if n.type == "identifier" and p.text_of(n) == r:
                raise _fail(f"the statements after the loop use {r} (line {p.line_of(n)})",
                            line=p.line_of(n))
        tied = structural.builtin_uses(stmt, p)
        if tied:
            raise _fail(f"the statements after the loop use {tied}")
        if any(n.type in ("return_statement", "__shared__") for n in walk(stmt)):
            raise _fail(f"'{_short(p, stmt)}' (line {p.line_of(stmt)}) after the loop",
                        line=p.line_of(stmt))
    if any(g.strip() != "1" for g in ctx.launch.grid[1:]) or \
            any(b.strip() != "1" for b in ctx.launch.block[1:]):
        raise _fail("the spec's block or grid is not 1D")
    reason = structural.block_dependence(ctx)
    if reason:
        raise _fail(reason)
    return ColumnReduction(p, index, index_type, index_init, p.text_of(unparen(bound_node)), bound_spec,
                           decl, acc, acc_type, loop, r, rows, combine, tuple(after))


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel is a thread-per-column reduction over rows, else the reason."""
    ctx, why = memory_acc.local(bound_locals.fold(ctx), ordered=False)
    if why is not None:
        return why
    try:
        match(ctx)
    except NotColumnReduction as exc:
        return reason_of(exc)
    return None


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """One application per tile of ``TILES``, (32, 8) first."""
    return tuple({"tile": t} for t in TILES)


def _line(combine: str, a: str, b: str) -> str:
    """``b`` combined into ``a``: ``a += b;``, ``a = fmaxf(a, b);`` or the original's
    comparison (``if (b > a) a = b;``, ``cudalens.optimizer.minmax.combine_text``)."""
    return minmax.combine_text(a, combine, b)


def apply(ctx: PassContext, tile: tuple[int, int] = TILES[0]) -> PassResult:
    """The tiled column reduction; block ``tile``, grid ``ceil_div(cols, tile[0])``.

    Raises:
        PassNotApplicable: the kernel does not match (the message says why).
        ValueError: ``tile`` is not one of ``TILES``.
    """
    ctx, why = memory_acc.local(bound_locals.fold(ctx), ordered=False)
    if why is not None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {why}")
    if tuple(tile) not in TILES:
        raise ValueError(f"tile must be one of {TILES}, found {tile!r}")
    cx, ty = tile
    try:
        m = match(ctx)
    except NotColumnReduction as exc:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {exc}") from None
    p = m.parsed
    w = structural.Layout(ctx)
    part, s = w.fresh("part"), w.fresh("s")
    c, acc, r = m.index, m.acc, m.row
    w(1, f"// {cx} columns x {ty} row groups per block: each thread combines every "
         f"{_ordinal(ty)} "
         f"row of its column, then shared memory combines the {ty}.")
    w(1, structural.block_guard(cx, ty))
    w(1, f"__shared__ {m.acc_type} {part}[{ty}][{cx}];")
    w(1, f"{m.index_type} {c} = {m.index_init};")
    w.text_block(1, p.text_of(m.acc_decl))
    head_body = m.loop.child_by_field_name("body")
    itype = for_header(m.loop, p).ctype or "int"
    w(1, f"if ({c} < {m.bound})")
    header = f"for ({itype} {r} = threadIdx.y; {r} < {p.text_of(m.rows)}; {r} += {ty})"
    if head_body.type == "compound_statement":
        w(2, header + " {")
        for stmt in named_children(head_body):
            w.text_block(3, p.text_of(stmt))
        w(2, "}")
    else:
        w(2, header)
        w.text_block(3, p.text_of(head_body))
    w(1, f"{part}[threadIdx.y][threadIdx.x] = {acc};")
    w(1, "__syncthreads();")
    w(1, f"for (int {s} = {ty // 2}; {s} > 0; {s} /= 2) {{")
    combine = _line(m.combine, f"{part}[threadIdx.y][threadIdx.x]",
                    f"{part}[threadIdx.y + {s}][threadIdx.x]")
    if minmax.is_conditional(m.combine):  # the comparison's own if, in braces
        combine = "{ " + combine + " }"
    w(2, f"if (threadIdx.y < {s}) " + combine)
    w(2, "__syncthreads();")
    w(1, "}")
    w(1, f"if (threadIdx.y == 0 && {c} < {m.bound}) {{")
    w(2, f"{acc} = {part}[0][threadIdx.x];")
    for stmt in m.after:
        w.text_block(2, p.text_of(stmt))
    w(1, "}")
    source = w.source()
    launch = dataclasses.replace(ctx.launch, block=(str(cx), str(ty)),
                                 grid=(f"ceil_div({m.bound_spec}, block.x)",))
    what = minmax.label(m.combine)
    order = (" (float sums are added in another order: within the tolerance the runner "
             "checks)" if m.combine == "+" else "")
    if minmax.is_conditional(m.combine):
        order += f" ({minmax.NAN_CAVEAT})"
    explanation = (f"column reduction over a {cx} x {ty} block tile: {ty} threads per column "
                   f"each {what} every {_ordinal(ty)} row (rows read coalesced, {ty}x the threads "
                   f"and "
                   f"loads in flight of one thread per column), then a shared-memory tree "
                   f"combines the {ty} partial results{order}")
    return PassResult(source=source, launch=launch, tags=("col-tile", f"tile={cx}x{ty}"),
                      explanation=explanation)
