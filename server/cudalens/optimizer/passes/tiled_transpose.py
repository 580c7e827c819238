"""Pass ``tiled_transpose``: a naive 2D transpose staged through a padded shared-memory tile.

A naive transpose ``out[col * rows + row] = in[row * cols + col]`` reads along rows and
writes along columns (or the reverse), so one side of every warp request touches 32
different 32-byte sectors for 32 elements. Staging a 32x32 tile in shared memory lets a
block read the tile with consecutive threads on consecutive input elements and write it
with consecutive threads on consecutive output elements, so both sides are coalesced. The
tile is 33 columns wide so that reading it by columns maps the 32 lanes of a warp to 32
different banks (M. Harris, "An Efficient Matrix Transpose in CUDA C/C++", NVIDIA developer
blog, 2013; CUDA C++ Best Practices Guide, "Shared Memory and Memory Banks").

Recognized (``cudalens.optimizer.index2d`` for the indices and the guard): the guarded body
is optional local declarations and one statement ``out[F] = E;`` where ``E`` reads one
other pointer parameter once, ``in[G]`` (or ``__ldg(&in[G])``), with scalars, literals and
pure math calls around it, and where ``G`` and ``F`` are affine in the two indices with
coefficient 1 on *different* indices (one side contiguous along each index): a transpose.
Index macros and either index order are fine; any leading dimensions are, since the rewrite
pastes the original index expressions and guard.

The rewrite (each thread moves ``32 / block_rows`` elements each way)::

    __shared__ T tile[32][33];
    for (j = threadIdx.y; j < 32; j += blockDim.y)   // read: threadIdx.x along in's rows
        { a = tileA * 32 + threadIdx.x; b = tileB * 32 + j; if (guard) tile[j][tx] = E; }
    __syncthreads();
    for (j = threadIdx.y; j < 32; j += blockDim.y)   // write: threadIdx.x along out's rows
        { a = tileA * 32 + j; b = tileB * 32 + threadIdx.x; if (guard) out[F] = tile[tx][j]; }

with block ``32 x block_rows`` and grid ``ceil_div(A, 32) x ceil_div(B, 32)``, where ``a``
is the index contiguous in ``in`` and ``b`` the one contiguous in ``out``.

Parameters: ``block_rows`` (8, 16, 4, 32; 8 is the blog's choice).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.optimizer import index2d, structural
from cudalens.optimizer.affine import Scope, poly_of, split_linear
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.pointer_uses import pointer_uses
from cudalens.kernel_model.syntax import Parsed, identifiers, named_children, parse, unparen, walk
from cudalens.spec import dtypes
from cudalens.spec.model import BufferDecl
from cudalens.spec.poly import Poly

name = "tiled_transpose"

TILE = 32
BLOCK_ROWS = (8, 16, 4, 32)


@dataclass(frozen=True)
class _Match:
    grid: index2d.Grid2D
    decls: tuple[tree_sitter.Node, ...]
    store: tree_sitter.Node  # the assignment expression out[F] = E
    out: str
    src: str
    fast_in: index2d.Axis  # the index with coefficient 1 in in's subscript
    fast_out: index2d.Axis
    out_type: str
    element_bytes: int


def _fail(msg: str, line: Optional[int] = None) -> index2d.NoMatch:
    return index2d.NoMatch(msg, line)


def _coefficient_one(p: Poly, axes: tuple[index2d.Axis, index2d.Axis], what: str,
                     text: str, line: int) -> index2d.Axis:
    found = []
    for ax in axes:
        try:
            coef, _ = split_linear(p, ax.var)
        except ValueError:
            raise _fail(f"the {what} index '{text}' (line {line}) is not affine in "
                        f"{ax.var}", line=line) from None
        if coef == Poly():
            raise _fail(f"the {what} index '{text}' (line {line}) does not use {ax.var}: not a "
                        f"2D transpose", line=line)
        found.append((ax, coef))
    unit = [ax for ax, coef in found if coef == Poly.const(1)]
    if len(unit) != 1:
        raise _fail(f"the {what} index '{text}' (line {line}) is not contiguous along exactly "
                    f"one of {axes[0].var}, {axes[1].var}", line=line)
    return unit[0]


def _read(ctx: PassContext, first: index2d.NoMatch) -> tuple[
        Parsed, tree_sitter.Node, Scope, list[tree_sitter.Node]]:
    """What the other spellings (``_tile_loop``, ``_grid1d``) start from: the kernel's parse
    and body, a ``Scope`` with the file's macros, and the body's statements.

    Raises:
        NoMatch: ``first`` (the plain pattern's reason) when the body cannot be read."""
    from cudalens.optimizer.macros import file_macros
    from cudalens.kernel_model.model import readable_body

    try:
        parsed, body = readable_body(ctx)
    except Exception:
        raise first from None
    return parsed, body, Scope(macros=file_macros(parsed)), named_children(body)


def _tile_loop(ctx: PassContext, first: index2d.NoMatch) -> index2d.Grid2D:
    """The vendor sample's shape as a ``Grid2D``: ``x = blockIdx.x * TX + threadIdx.x``,
    ``y = blockIdx.y * T + threadIdx.y`` and ``for (j = 0; j < T; j += BY) if (x < W && y + j <
    H) {...}``, where the spec's block is ``TX x BY`` (so the loop covers the ``T`` rows of the
    block's tile). Every index and bound uses ``y`` only as ``y + j``, so the element is row ``y
    + j``: the rewrite names the row ``y`` and emits ``const int j = 0;``.

    Raises:
        NoMatch: ``first`` (the plain pattern's reason) when the kernel is not of this shape.
    """
    from cudalens.kernel_model.loops import for_header

    parsed, body, scope, stmts = _read(ctx, first)
    macros = scope.macros
    try:
        bx, by = (int(b) for b in ctx.launch.block[:2])
    except ValueError:
        raise first from None
    if len(stmts) != 3 or any(x.type != "declaration" for x in stmts[:2]) or \
            stmts[2].type != "for_statement":
        raise first
    axes = {}
    for stmt, axis in zip(stmts[:2], "xy"):
        decls = stmt.children_by_field_name("declarator")
        if len(decls) != 1 or decls[0].type != "init_declarator":
            raise first
        poly = poly_of(decls[0].child_by_field_name("value"), parsed, scope)
        if poly is None:
            raise first
        try:
            coef, rest = split_linear(poly, f"blockIdx.{axis}")
        except ValueError:
            raise first from None
        if rest != Poly.sym(f"threadIdx.{axis}") or not coef.is_const():
            raise first
        type_node = stmt.child_by_field_name("type")
        axes[axis] = (parsed.text_of(decls[0].child_by_field_name("declarator")),
                      " ".join(parsed.text_of(type_node).split()), coef.constant)
    head = for_header(stmts[2], parsed)
    (xv, _, tx), (yv, _, ty) = axes["x"], axes["y"]  # the types: made below
    if head is None or tx != bx or by <= 0 or ty % by or \
            _const(head.start, parsed, scope) != 0 or head.body is None:
        raise first
    j = head.var
    cond = head.cond
    upd = unparen(head.update)
    if cond.type != "binary_expression" or cond.child_by_field_name("operator").type != "<" or \
            parsed.text_of(unparen(cond.child_by_field_name("left"))) != j or \
            _const(cond.child_by_field_name("right"), parsed, scope) != ty or \
            upd.type != "assignment_expression" or upd.child_by_field_name("operator").type != "+=" \
            or _const(upd.child_by_field_name("right"), parsed, scope) != by:
        raise first
    inner = head.body
    while inner.type == "compound_statement" and len(named_children(inner)) == 1:
        inner = named_children(inner)[0]
    if inner.type != "if_statement" or inner.child_by_field_name("alternative") is not None:
        raise first
    guard = unparen(inner.child_by_field_name("condition"))
    bounds = {}
    for part in index2d._conjuncts(guard, "&&"):
        if part.type != "binary_expression" or part.child_by_field_name("operator").type != "<":
            raise first
        lp = poly_of(part.child_by_field_name("left"), parsed, scope)
        var = next((v for v, want in ((xv, Poly.sym(xv)), (yv, Poly.sym(yv) + Poly.sym(j)))
                    if lp == want), None)
        if var is None or var in bounds:
            raise first
        bounds[var] = part.child_by_field_name("right")
    if set(bounds) != {xv, yv}:
        raise first
    consequence = inner.child_by_field_name("consequence")
    statements = tuple(named_children(consequence)) \
        if consequence.type == "compound_statement" else (consequence,)
    for stmt in statements:  # y only as y + j, j nowhere else
        for n in walk(stmt):
            if n.type == "subscript_expression":
                idx = named_children(n.child_by_field_name("indices"))
                q = poly_of(idx[0], parsed, scope) if len(idx) == 1 else None
                if q is None:
                    raise first
                q = q.substitute(lambda v: Poly.sym(yv) - Poly.sym(j) if v == yv else Poly.sym(v))
                if j in q.symbols:
                    raise first
    made = {}
    for axis, (var, ctype, _) in axes.items():
        bnode = bounds[var]
        made[axis] = index2d.Axis(var, ctype, axis, parsed.text_of(unparen(bnode)),
                                  index2d.spec_text(bnode, parsed, ctx, macros),
                                  poly_of(bnode, parsed, scope))
    return index2d.Grid2D(x=made["x"], y=made["y"], guard=parsed.text_of(guard),
                          statements=statements, parsed=parsed, body=body, macros=macros,
                          fixed=(f"const int {j} = 0;  // the row is {yv} + {j}",))


def _const(node, parsed: Parsed, scope: Scope) -> Optional[int]:
    q = poly_of(node, parsed, scope)
    return q.constant if q is not None and q.is_const() else None


def _grid1d(ctx: PassContext, first: index2d.NoMatch) -> index2d.Grid2D:
    """A 1D grid over the 2D data as a ``Grid2D``: ``idx = blockIdx.x * blockDim.x +
    threadIdx.x``, the guard ``idx < R * C`` (or ``if (idx >= R * C) return;``), then ``r = idx
    / C`` and ``c = idx % C``: element (``r``, ``c``) for every ``r < R``, ``c < C``, and ``idx``
    is ``r * C + c`` (emitted as a declaration after the two indices).

    Raises:
        NoMatch: ``first`` (the plain pattern's reason) when the kernel is not of this shape.
    """
    from cudalens.optimizer.affine import is_global_index

    parsed, body, scope, stmts = _read(ctx, first)
    macros = scope.macros
    if len(stmts) < 2 or stmts[0].type != "declaration" or stmts[1].type != "if_statement" or \
            stmts[1].child_by_field_name("alternative") is not None:
        raise first
    decls = stmts[0].children_by_field_name("declarator")
    if len(decls) != 1 or decls[0].type != "init_declarator" or \
            not is_global_index(poly_of(decls[0].child_by_field_name("value"), parsed, scope), "x"):
        raise first
    idx = parsed.text_of(decls[0].child_by_field_name("declarator"))
    type_node = stmts[0].child_by_field_name("type")
    idx_type = " ".join(parsed.text_of(type_node).split()) if type_node is not None else "int"
    cond = unparen(stmts[1].child_by_field_name("condition"))
    consequence = stmts[1].child_by_field_name("consequence")
    inner = consequence
    if inner.type == "compound_statement" and len(named_children(inner)) == 1:
        inner = named_children(inner)[0]
    exit_ = inner.type == "return_statement" and not named_children(inner)
    if cond.type != "binary_expression" or \
            cond.child_by_field_name("operator").type != (">=" if exit_ else "<") or \
            parsed.text_of(unparen(cond.child_by_field_name("left"))) != idx:
        raise first
    total = unparen(cond.child_by_field_name("right"))
    guarded = list(stmts[2:]) if exit_ else (
        named_children(consequence) if consequence.type == "compound_statement" else [consequence])
    if not exit_ and len(stmts) > 2:
        raise first
    if total.type != "binary_expression" or total.child_by_field_name("operator").type != "*" or \
            len(guarded) < 3:
        raise first
    split: dict[str, tuple[str, str, tree_sitter.Node]] = {}  # "/" or "%" -> (var, type, divisor)
    for d in guarded[:2]:
        ds = d.children_by_field_name("declarator") if d.type == "declaration" else []
        if len(ds) != 1 or ds[0].type != "init_declarator":
            raise first
        value = unparen(ds[0].child_by_field_name("value"))
        if value.type != "binary_expression" or \
                value.child_by_field_name("operator").type not in ("/", "%") or \
                parsed.text_of(unparen(value.child_by_field_name("left"))) != idx:
            raise first
        t = d.child_by_field_name("type")
        split[value.child_by_field_name("operator").type] = (
            parsed.text_of(ds[0].child_by_field_name("declarator")),
            " ".join(parsed.text_of(t).split()) if t is not None else "int",
            unparen(value.child_by_field_name("right")))
    if set(split) != {"/", "%"}:
        raise first
    (r, rtype, cdiv), (c, ctype, cmod) = split["/"], split["%"]
    cols_text = parsed.text_of(cdiv)
    if parsed.text_of(cmod) != cols_text:
        raise first
    left, right = unparen(total.child_by_field_name("left")), \
        unparen(total.child_by_field_name("right"))
    if parsed.text_of(right) == cols_text:
        rows_node = left
    elif parsed.text_of(left) == cols_text:
        rows_node = right
    else:
        raise first
    statements = tuple(guarded[2:])
    for stmt in statements:
        for n in walk(stmt):
            t = n.child_by_field_name("left") if n.type == "assignment_expression" else \
                n.child_by_field_name("argument") if n.type == "update_expression" else None
            if t is not None and unparen(t).type == "identifier" and \
                    parsed.text_of(unparen(t)) in (idx, r, c):
                raise first
    rows_text = parsed.text_of(rows_node)
    axis = lambda var, ctyp, ax, node: index2d.Axis(
        var, ctyp, ax, parsed.text_of(node), index2d.spec_text(node, parsed, ctx, macros),
        poly_of(node, parsed, scope))
    return index2d.Grid2D(
        x=axis(c, ctype, "x", cdiv), y=axis(r, rtype, "y", rows_node),
        guard=f"{r} < {rows_text} && {c} < {cols_text}", statements=statements, parsed=parsed,
        body=body, macros=macros,
        fixed=(f"const {dtypes.normalize_c_type(idx_type)} {idx} = {r} * {cols_text} + {c};",))


def _match(ctx: PassContext) -> _Match:
    try:
        g = index2d.match(ctx)
    except index2d.NoMatch as exc:
        try:
            g = _tile_loop(ctx, exc)
        except index2d.NoMatch:
            g = _grid1d(ctx, exc)
    parsed = g.parsed
    if ctx.spec.atomics:
        raise _fail("the spec marks the kernel as using atomics")
    stmts = list(g.statements)
    store_stmt = stmts[-1]
    decls = stmts[:-1]
    locals_: dict[str, tuple[Parsed, tree_sitter.Node]] = {}
    pointers = {p.name for p in ctx.kernel.parameters if p.is_pointer}
    row_pointers: dict[str, tuple[str, tree_sitter.Node]] = {}  # name -> (buffer, offset)
    for d in decls:
        got = _row_pointer(d, parsed, pointers)
        if got is not None:
            row_pointers[got[0]] = got[1:]
            continue
        if d.type != "declaration":
            raise _fail(f"expected only local declarations before the final store, found "
                        f"'{index2d._first_line(parsed.text_of(d))}' at line {parsed.line_of(d)}",
                        line=parsed.line_of(d))
        for decl in d.children_by_field_name("declarator"):
            if decl.type != "init_declarator" or \
                    decl.child_by_field_name("declarator").type != "identifier":
                raise _fail(f"the declaration at line {parsed.line_of(d)} is not 'T name = "
                            f"value;'", line=parsed.line_of(d))
            locals_[parsed.text_of(decl.child_by_field_name("declarator"))] = \
                (parsed, decl.child_by_field_name("value"))
    expr = named_children(store_stmt)[0] if store_stmt.type == "expression_statement" and \
        named_children(store_stmt) else None
    if expr is None or expr.type != "assignment_expression" or \
            expr.child_by_field_name("operator").type != "=":
        raise _fail(f"expected the guarded body to end with 'out[...] = in[...];', found "
                    f"'{index2d._first_line(parsed.text_of(store_stmt))}' at line "
                    f"{parsed.line_of(store_stmt)}", line=parsed.line_of(store_stmt))
    for node in stmts:
        tied = structural.thread_tied(node, parsed)
        if tied:
            raise _fail(f"the body uses {tied}; threads cooperate already")
        call = structural.impure_call(node, parsed, g.macros)
        if call:
            raise _fail(f"the body calls {call}, which may have side effects or depend on "
                        f"the thread")
        builtin = structural.builtin_uses(node, parsed)
        if builtin:
            raise _fail(f"the body uses {builtin} beyond the two indices")
        for n in walk(node):
            if n.type in ("assignment_expression", "update_expression") and n != expr:
                raise _fail(f"the body assigns at line {parsed.line_of(n)} "
                            f"('{parsed.text_of(n)}'); expected one store", line=parsed.line_of(n))
    walked = [s for s in stmts if _row_pointer(s, parsed, pointers) is None]
    uses = [u for s in walked for u in pointer_uses(s, parsed, pointers | set(row_pointers))]
    buffer_of = lambda u: row_pointers[u.name][0] if u.name in row_pointers else u.name
    writes = [u for u in uses if u.kind != "read"]
    reads = [u for u in uses if u.kind == "read"]
    left = unparen(expr.child_by_field_name("left"))
    if len(writes) != 1 or writes[0].access is None or writes[0].access != left or \
            writes[0].form != "subscript" or writes[0].index is None:
        shown = ", ".join(f"'{u.text}' (line {u.line})" for u in writes) or "none"
        raise _fail(f"expected exactly one store 'out[...] = ...', found writes {shown}")
    out = buffer_of(writes[0])
    if len(reads) != 1 or reads[0].form != "subscript" or reads[0].index is None or \
            buffer_of(reads[0]) == out:
        shown = ", ".join(f"'{u.text}' (line {u.line})" for u in reads) or "none"
        raise _fail(f"expected the stored value to read one other buffer once as in[...], "
                    f"found reads {shown}")
    src = buffer_of(reads[0])
    for text in g.fixed:  # declarations the rewrite adds (the flat index, the tile loop's j)
        fp = parse("void f() { " + text + " }")
        for n in walk(fp.tree.root_node):
            if n.type == "init_declarator":
                locals_[fp.text_of(n.child_by_field_name("declarator"))] = \
                    (fp, n.child_by_field_name("value"))
    scope = Scope(macros=g.macros, locals=locals_)
    axes = (g.x, g.y)

    def index_poly(u) -> Optional[Poly]:  # a row pointer's offset folded into the index
        p = poly_of(u.index, parsed, scope)
        if u.name not in row_pointers or p is None:
            return p
        offset = poly_of(row_pointers[u.name][1], parsed, scope)
        return None if offset is None else offset + p

    p_out = index_poly(writes[0])
    p_in = index_poly(reads[0])
    for p, u, what in ((p_out, writes[0], "output"), (p_in, reads[0], "input")):
        if p is None:
            raise _fail(f"cannot read the {what} index '{parsed.text_of(u.index)}' (line "
                        f"{u.line}) as an integer polynomial of the indices", line=u.line)
    fast_in = _coefficient_one(p_in, axes, "input", parsed.text_of(reads[0].index), reads[0].line)
    fast_out = _coefficient_one(p_out, axes, "output", parsed.text_of(writes[0].index),
                                writes[0].line)
    if fast_in.var == fast_out.var:
        raise _fail(f"{src} and {out} are both contiguous along {fast_in.var}: a copy, not a "
                    f"transpose (already coalesced on both sides)")
    decl = ctx.spec.param(out) if out in {p.name for p in ctx.spec.params} else None
    if not isinstance(decl, BufferDecl):
        raise _fail(f"the spec has no in/out/inout line for {out}")
    out_type = ctx.kernel.parameter(out).type
    return _Match(g, tuple(decls), expr, out, src, fast_in, fast_out, out_type,
                  structural.element_bytes(decl.type))


def _row_pointer(d: tree_sitter.Node, parsed: Parsed,
                 pointers: set[str]) -> Optional[tuple[str, str, tree_sitter.Node]]:
    """(name, buffer, offset node) for a declaration ``[const] T* name = buffer + offset;``
    (either order of the sum) of one pointer into a pointer parameter, else None."""
    if d.type != "declaration":
        return None
    decls = d.children_by_field_name("declarator")
    if len(decls) != 1 or decls[0].type != "init_declarator":
        return None
    target, value = decls[0].child_by_field_name("declarator"), \
        unparen(decls[0].child_by_field_name("value"))
    inner = target.child_by_field_name("declarator") \
        if target.type == "pointer_declarator" else None
    if inner is None or inner.type != "identifier" or value.type != "binary_expression" or \
            value.child_by_field_name("operator").type != "+":
        return None
    left, right = value.child_by_field_name("left"), value.child_by_field_name("right")
    for base, offset in ((left, right), (right, left)):
        base = unparen(base)
        if base.type == "identifier" and parsed.text_of(base) in pointers and \
                not identifiers(offset, parsed) & pointers:
            return parsed.text_of(inner), parsed.text_of(base), offset
    return None


def _plan(ctx: PassContext) -> tuple[Optional[str], Optional[_Match]]:
    return structural.plan(ctx, _early(ctx), _match, index2d.NoMatch)


def _early(ctx: PassContext) -> Optional[str]:
    if any(dim in ctx.text[ctx.kernel.body_start_byte:ctx.kernel.body_end_byte]
           for dim in ("threadIdx.z", "blockIdx.z", "blockDim.z")):
        return "the kernel indexes along z; the pass rewrites 2D transposes"
    return None


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel is a naive 2D transpose the pass can tile, else the reason."""
    return _plan(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """One application per block height, 32x8 first."""
    return tuple({"block_rows": r} for r in BLOCK_ROWS)


def _needed_decls(decls: tuple[tree_sitter.Node, ...], use: tree_sitter.Node,
                  parsed: Parsed) -> list[tree_sitter.Node]:
    """The local declarations ``use`` needs, directly or through other locals, in order (so
    each phase computes only what it uses: the write phase does not re-read the input)."""
    names = identifiers(use, parsed)
    keep: list[tree_sitter.Node] = []
    for d in reversed(decls):
        declared = {parsed.text_of(_declared(x.child_by_field_name("declarator")))
                    for x in d.children_by_field_name("declarator")}
        if declared & names:
            keep.append(d)
            names |= identifiers(d, parsed)
    return list(reversed(keep))


def _declared(node: tree_sitter.Node) -> tree_sitter.Node:
    """The declared name under pointer declarators (``* row`` -> ``row``)."""
    while node.type == "pointer_declarator":
        node = node.child_by_field_name("declarator")
    return node


def _decl_line(ax: index2d.Axis, value: str) -> str:
    ctype = dtypes.normalize_c_type(ax.ctype)
    return f"const {ctype} {ax.var} = {value};"


def apply(ctx: PassContext, block_rows: int = 8) -> PassResult:
    """The tiled kernel with block ``32 x block_rows``.

    Raises:
        PassNotApplicable: the precondition fails (the message says why).
        ValueError: ``block_rows`` is not one of ``BLOCK_ROWS``.
    """
    if block_rows not in BLOCK_ROWS:
        raise ValueError(f"block_rows must be one of {BLOCK_ROWS}, found {block_rows!r}")
    reason, m = _plan(ctx)
    if reason is not None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    parsed = m.grid.parsed
    w = structural.Layout(ctx)
    tile_n, tile, j = w.fresh("kTile"), w.fresh("tile"), w.fresh("j")
    a, b = m.fast_in, m.fast_out
    rhs_node = m.store.child_by_field_name("right")
    lhs_node = m.store.child_by_field_name("left")
    rhs, lhs = parsed.text_of(rhs_node), parsed.text_of(lhs_node)
    needed = {"read": _needed_decls(m.decls, rhs_node, parsed),
              "write": _needed_decls(m.decls, lhs_node, parsed)}
    w(1, f"// Transpose via a shared {TILE}x{TILE + 1} tile (no bank conflicts): {m.src} and "
         f"{m.out} both coalesced.")
    w(1, f"constexpr int {tile_n} = {TILE};")
    w(1, structural.block_guard(TILE))  # any blockDim.y: the tile loops stride by it
    w(1, f"__shared__ {m.out_type} {tile}[{tile_n}][{tile_n} + 1];")
    for phase in ("read", "write"):
        if phase == "write":
            w(1, "__syncthreads();")
        w(1, f"for (int {j} = threadIdx.y; {j} < {tile_n}; {j} += blockDim.y) {{")
        lane_a = "threadIdx.x" if phase == "read" else j
        lane_b = j if phase == "read" else "threadIdx.x"
        w(2, _decl_line(a, f"blockIdx.x * {tile_n} + {lane_a}"))
        w(2, _decl_line(b, f"blockIdx.y * {tile_n} + {lane_b}"))
        for fixed in m.grid.fixed:
            w(2, fixed)
        w(2, f"if ({m.grid.guard}) {{")
        for d in needed[phase]:
            w.text_block(3, parsed.text_of(d))
        if phase == "read":
            w(3, f"{tile}[{j}][threadIdx.x] = {rhs};")
        else:
            w(3, f"{lhs} = {tile}[threadIdx.x][{j}];")
        w(2, "}")
        w(1, "}")
    source = w.source()
    launch = dataclasses.replace(
        ctx.launch, block=(str(TILE), str(block_rows)),
        grid=(f"ceil_div({a.bound_spec}, {TILE})", f"ceil_div({b.bound_spec}, {TILE})"))
    sectors = max(1, 32 // m.element_bytes)
    explanation = (f"{TILE}x{TILE} shared-memory tile padded to {TILE + 1} columns: reads of "
                   f"{m.src} and writes of {m.out} are both coalesced (a warp moves "
                   f"{TILE * m.element_bytes} contiguous bytes per request instead of touching "
                   f"{TILE} separate 32-byte sectors, {sectors}x the bytes it needs, on the "
                   f"strided side), and the padding keeps the column reads of the tile free of "
                   f"shared-memory bank conflicts; block {TILE}x{block_rows}, "
                   f"{TILE // block_rows} elements per thread")
    return PassResult(source=source, launch=launch,
                      tags=("tiled-transpose", f"block={TILE}x{block_rows}"),
                      explanation=explanation)
