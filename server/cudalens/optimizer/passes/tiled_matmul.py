"""Pass ``tiled_matmul``: a naive matrix product staged through shared-memory tiles.

In the naive kernel every thread reads a whole row of ``A`` and a whole column of ``B`` from
global memory: ``2 * K`` loads per output, and each element of ``A`` and ``B`` is loaded by
``N`` (resp. ``M``) different threads. Staging ``T x T`` tiles of both operands in shared
memory (each loaded once per block, coalesced) divides the global loads by ``T``, and each
thread computing ``R`` outputs of one column reuses every ``B`` value it reads from shared
memory ``R`` times (D. Kirk and W. Hwu, "Programming Massively Parallel Processors", ch. 5,
tiled matrix multiplication; CUDA C++ Programming Guide, "Shared Memory", matrix
multiplication example).

Recognized (``cudalens.optimizer.index2d`` for the indices and the guard)::

    T acc = INIT;                              // INIT without loads or indices
    for (int p = 0; p < K; ++p)                // or p++, p += 1
        acc += A[f(row, p)] * B[g(p, col)];    // one statement reading two buffers
    ...statements using acc (the store)...

where one operand's index uses ``p`` and only the y index, the other ``p`` and only the x
index (either order of the factors, any affine layout, index macros expanded).

Each output still adds the same terms in the same order ``p = 0 .. K-1``: the rewrite pastes
the original loop statement with the two loads replaced by tile reads, and stops each tile's
inner loop at ``K``, so the results are bit for bit the original's. The tiles are zero-filled
outside the matrices only so that no thread reads out of bounds; those slots are never added.

Parameters: ``tile`` (32 or 16) and ``rows_per_thread`` R (4, 1, 2, 8): block ``tile x tile /
R``, grid ``ceil_div(x bound, tile) x ceil_div(y bound, tile)``.
"""

from __future__ import annotations

import re

import dataclasses
from dataclasses import dataclass
from functools import partial
from typing import Optional

import tree_sitter

from cudalens.optimizer import index2d, memory_acc, row_pointers, structural
from cudalens.optimizer.affine import Scope, poly_of, split_linear
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.pointer_uses import pointer_uses
from cudalens.kernel_model.loops import for_header, less_than_bound
from cudalens.kernel_model.syntax import Parsed, named_children, unparen, walk
from cudalens.kernel_model.syntax import short_text
from cudalens.spec import dtypes
from cudalens.spec.model import ScalarDecl
from cudalens.spec.poly import Poly

name = "tiled_matmul"

SHAPES: tuple[tuple[int, int], ...] = ((32, 4), (32, 1), (16, 1), (32, 2), (32, 8))


@dataclass(frozen=True)
class _Match:
    grid: index2d.Grid2D
    acc: str
    acc_decl: tree_sitter.Node
    loop: tree_sitter.Node
    var: str  # the loop counter p
    bound: str  # K, as written
    statement: tree_sitter.Node  # the loop's statement
    read_y: tree_sitter.Node  # the load whose index uses the y index
    read_x: tree_sitter.Node
    y_name: str  # buffer names
    x_name: str
    y_type: str  # element C types
    x_type: str
    post: tuple[tree_sitter.Node, ...]
    coalesced: tuple[bool, bool]  # (y operand contiguous along p, x operand along x index)
    polys: tuple[Poly, Poly] = (Poly(), Poly())  # (y operand's index, x operand's index)
    pragmas: tuple[str, ...] = ()  # the '#pragma' lines right before the loop, as written
    init_indexed: bool = False  # the initial value reads the indices or a buffer


def _fail(msg: str, line: Optional[int] = None) -> index2d.NoMatch:
    return index2d.NoMatch(msg, line)


_short = partial(short_text, limit=70)  # reasons here quote up to 70 characters


def _loop_parts(loop: tree_sitter.Node, parsed: Parsed, scope: Scope) -> tuple[str, tree_sitter.Node]:
    """(counter, bound node) of ``for (int p = 0; p < K; ++p)``; raises NoMatch."""
    bad = _fail(f"expected the loop 'for (int p = 0; p < K; ++p)', found "
                f"'{_short(parsed, loop)}' at line {parsed.line_of(loop)}",
                line=parsed.line_of(loop))
    head = for_header(loop, parsed)
    if head is None or poly_of(head.start, parsed, scope) != Poly():
        raise bad
    bound = less_than_bound(head, parsed)
    text = parsed.text_of(unparen(head.update)).replace(" ", "")
    var = head.var
    if bound is None or text not in (f"++{var}", f"{var}++", f"{var}+=1", f"{var}={var}+1"):
        raise bad
    return var, bound


def _uses(p: Poly, name: str) -> bool:
    coef, _ = split_linear(p, name)
    return coef != Poly()


def _match(ctx: PassContext) -> _Match:
    g = index2d.match(ctx, counters=True)  # the rewrite declares its own k
    parsed = g.parsed
    scope = Scope(macros=g.macros)
    # ``#pragma`` lines between the statements (``#pragma unroll`` before the k loop) are
    # hints to the compiler, not statements: the one right before the loop is kept for it
    stmts = [s for s in g.statements if not _is_pragma(s, parsed)]
    loops = [i for i, s in enumerate(stmts) if s.type == "for_statement"]
    if len(loops) != 1:
        raise _fail(f"expected one loop over k in the guarded body, found {len(loops)}")
    li = loops[0]
    loop, pre, post = stmts[li], stmts[:li], tuple(stmts[li + 1:])
    head = for_header(loop, parsed)  # 'int k;' before 'for (k = 0; ...)': the loop's own
    if head is not None and head.declared is not None:
        pre = [st for st in pre if st.id != head.declared.id]
    if len(pre) != 1 or pre[0].type != "declaration":
        found = "; ".join(f"'{_short(parsed, s)}' (line {parsed.line_of(s)})" for s in pre)
        raise _fail(f"expected exactly the accumulator's declaration ('float acc = 0.0f;') "
                    f"before the loop, found {found or 'nothing'}",
                    line=parsed.line_of(pre[0] if pre else loop))
    decls = pre[0].children_by_field_name("declarator")
    if len(decls) != 1 or decls[0].type != "init_declarator":
        raise _fail(f"expected 'T acc = value;' before the loop, found "
                    f"'{_short(parsed, pre[0])}' (line {parsed.line_of(pre[0])})",
                    line=parsed.line_of(pre[0]))
    acc = parsed.text_of(decls[0].child_by_field_name("declarator"))
    init = decls[0].child_by_field_name("value")
    names = {g.x.var, g.y.var}
    pointers = {p.name for p in ctx.kernel.parameters if p.is_pointer}
    # an initial value of the output element (``float acc = C[y * n + x] * beta;``, what
    # ``memory_acc`` makes of ``C[...] *= beta;``) is evaluated per output, under the guard
    indexed = bool({parsed.text_of(n) for n in walk(init) if n.type == "identifier"} &
                   (names | pointers))
    if indexed and not _reads_own_output(init, stmts[loops[0] + 1:], parsed, pointers):
        raise _fail(f"the accumulator's initial value '{parsed.text_of(init)}' uses the "
                    f"indices or a buffer")
    var, bound = _loop_parts(loop, parsed, scope)
    for n in walk(bound):
        if n.type == "identifier":
            word = parsed.text_of(n)
            decl = None
            try:
                decl = ctx.spec.param(word)
            except KeyError:
                pass
            if not isinstance(decl, ScalarDecl) and word not in g.macros:
                raise _fail(f"the loop bound '{parsed.text_of(bound)}' (line "
                            f"{parsed.line_of(loop)}) uses {word}, not a scalar parameter",
                            line=parsed.line_of(loop))
    body = loop.child_by_field_name("body")
    inner = named_children(body) if body.type == "compound_statement" else [body]
    if len(inner) != 1 or inner[0].type != "expression_statement":
        raise _fail(f"expected one statement 'acc += A[...] * B[...];' in the loop at line "
                    f"{parsed.line_of(loop)}", line=parsed.line_of(loop))
    statement = inner[0]
    expr = named_children(statement)[0]
    if expr.type != "assignment_expression" or \
            parsed.text_of(unparen(expr.child_by_field_name("left"))) != acc:
        raise _fail(f"the loop's statement '{_short(parsed, statement)}' (line "
                    f"{parsed.line_of(statement)}) does not accumulate into {acc}",
                    line=parsed.line_of(statement))
    for n in walk(expr.child_by_field_name("right")):
        if n.type in ("assignment_expression", "update_expression"):
            raise _fail(f"the loop's statement assigns twice (line {parsed.line_of(n)})",
                        line=parsed.line_of(n))
    for node in [statement, *post]:
        tied = structural.thread_tied(node, parsed)
        if tied:
            raise _fail(f"the body uses {tied}; threads cooperate already")
        call = structural.impure_call(node, parsed, g.macros)
        if call:
            raise _fail(f"the body calls {call}, which may have side effects")
    uses = pointer_uses(statement, parsed, pointers)
    if len(uses) != 2 or any(u.kind != "read" or u.form != "subscript" or u.index is None
                             for u in uses):
        shown = ", ".join(f"'{u.text}'" for u in uses) or "none"
        raise _fail(f"expected the loop's statement to read two buffers once each as X[...], "
                    f"found {shown} (line {parsed.line_of(statement)})",
                    line=parsed.line_of(statement))
    reads = {}
    for u in uses:
        p = poly_of(u.index, parsed, scope)
        if p is None:
            raise _fail(f"cannot read the index of '{u.text}' (line {u.line}) as an integer "
                        f"polynomial", line=u.line)
        try:
            uses_y, uses_x, uses_k = _uses(p, g.y.var), _uses(p, g.x.var), _uses(p, var)
        except ValueError:
            raise _fail(f"the index of '{u.text}' (line {u.line}) is not affine",
                        line=u.line) from None
        if not uses_k or uses_x == uses_y:
            raise _fail(f"'{u.text}' (line {u.line}) must use {var} and exactly one of "
                        f"{g.y.var}, {g.x.var}: not a matrix product's operand", line=u.line)
        side = "y" if uses_y else "x"
        if side in reads:
            raise _fail(f"both operands use {g.y.var if side == 'y' else g.x.var}: not a "
                        f"matrix product")
        coef_k, _ = split_linear(p, var)
        coef_x, _ = split_linear(p, g.x.var)
        reads[side] = (u, coef_k == Poly.const(1) if side == "y" else coef_x == Poly.const(1),
                       p)
    reads_nodes = {reads["y"][0].access, reads["x"][0].access}
    for n in walk(statement):
        if n.type == "identifier" and parsed.text_of(n) in (names | {var}) and \
                not any(r.start_byte <= n.start_byte < r.end_byte for r in reads_nodes):
            raise _fail(f"the loop's statement uses {parsed.text_of(n)} outside the two loads "
                        f"(line {parsed.line_of(n)})", line=parsed.line_of(n))
    for node in post:
        for n in walk(node):
            if n.type == "identifier" and parsed.text_of(n) == var:
                raise _fail(f"the statements after the loop use {var} (line {parsed.line_of(n)})",
                            line=parsed.line_of(n))
    ry, rx = reads["y"][0], reads["x"][0]
    before = [s for s in g.statements if s.end_byte <= loop.start_byte]
    pragmas = []
    for s in reversed(before):  # the pragmas right before the loop, in order
        if not _is_pragma(s, parsed):
            break
        pragmas.insert(0, " ".join(parsed.text_of(s).split()))
    return _Match(g, acc, pre[0], loop, var, parsed.text_of(bound), statement, ry.access,
                  rx.access, ry.name, rx.name, ctx.kernel.parameter(ry.name).type,
                  ctx.kernel.parameter(rx.name).type, post, (reads["y"][1], reads["x"][1]),
                  (reads["y"][2], reads["x"][2]), tuple(pragmas), indexed)


def _reads_own_output(init: tree_sitter.Node, post: list, parsed: Parsed,
                      pointers: set[str]) -> bool:
    """``init`` reads buffers only as the element a statement of ``post`` stores
    (``C[y * n + x] * beta`` before ``C[y * n + x] = acc;``: each thread's own output, read
    once), and assigns and calls nothing."""
    stored = set()
    for st in post:
        for n in walk(st):
            if n.type == "assignment_expression":
                stored.add("".join(parsed.text_of(unparen(n.child_by_field_name("left"))).split()))
    for n in walk(init):
        if n.type in ("assignment_expression", "update_expression", "call_expression"):
            return False
        if n.type == "identifier" and parsed.text_of(n) in pointers:
            access = n.parent
            if access is None or access.type != "subscript_expression" or \
                    "".join(parsed.text_of(access).split()) not in stored:
                return False
    return True


def _is_pragma(node: tree_sitter.Node, parsed: Parsed) -> bool:
    """``node`` is a ``#pragma ...`` line (tree-sitter's ``preproc_call``)."""
    if node.type != "preproc_call":
        return False
    directive = node.child_by_field_name("directive")
    return directive is not None and parsed.text_of(directive).replace(" ", "") == "#pragma"


def match(ctx: PassContext) -> _Match:
    """The naive matrix product of ``ctx``'s kernel (module doc), for the passes that rewrite
    it (this one and ``regblock_matmul``).

    Raises:
        index2d.NoMatch: the kernel does not fit; the message says why, with the line.
    """
    return _match(ctx)


_ZERO = re.compile(r"^(0|0?\.0*|0\.0*[eE][+-]?\d+)[fF]?$")


def _zero(ctype: str) -> str:
    """A zero of ``ctype`` as an engineer writes it (``0.0f``, ``0.0``, else ``(T)0``)."""
    return {"float": "0.0f", "double": "0.0"}.get(" ".join(ctype.split()), f"({ctype})0")


def _plan(ctx: PassContext) -> tuple[Optional[str], Optional[_Match]]:
    """(reason, match) for ``ctx``, which ``check`` and ``apply`` pass with its row pointers
    folded (``row_pointers.inline``): ``apply`` rewrites that folded text."""
    return structural.plan(ctx, _early(ctx), _match, index2d.NoMatch)


def _early(ctx: PassContext) -> Optional[str]:
    body = ctx.text[ctx.kernel.body_start_byte:ctx.kernel.body_end_byte]
    if any(d in body for d in ("threadIdx.z", "blockIdx.z", "blockDim.z")):
        return "the kernel indexes along z; the pass rewrites 2D matrix products"
    if ctx.spec.atomics:
        return "the spec marks the kernel as using atomics"
    return None


def matched(ctx: PassContext, plan, pass_name: str) -> tuple[PassContext, _Match,
                                                            structural.Layout]:
    """What both matmul passes' ``apply`` start from: ``ctx`` with its row pointers folded
    (``row_pointers.inline``), the match ``plan`` (the pass's ``_plan``) finds in it, and the
    ``structural.Layout`` the new body is written with.

    Raises:
        PassNotApplicable: ``plan`` gives a reason, as ``"PASS on KERNEL: REASON"``."""
    ctx, reason = prepare(ctx)
    m = None
    if reason is None:
        reason, m = plan(ctx)
    if reason is not None:
        raise PassNotApplicable(f"{pass_name} on {ctx.kernel.name}: {reason}")
    return ctx, m, structural.Layout(ctx)


def prepare(ctx: PassContext) -> tuple[PassContext, Optional[str]]:
    """What both matmul passes match: ``ctx`` with its row pointers folded
    (``row_pointers.inline``) and an accumulation into the output element kept in a
    register in the original's order (``memory_acc.local``, ordered), with the reason when
    such an accumulation cannot be moved (else None)."""
    return memory_acc.local(row_pointers.inline(ctx), ordered=True)


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel is a naive matrix product the pass can tile, else the reason."""
    ctx, reason = prepare(ctx)
    return reason if reason is not None else _plan(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """One application per (tile, rows per thread), 32x32 with 4 rows per thread first."""
    return tuple({"tile": t, "rows_per_thread": r} for t, r in SHAPES)


def apply(ctx: PassContext, tile: int = 32, rows_per_thread: int = 4) -> PassResult:
    """The tiled kernel with block ``tile x tile / rows_per_thread``.

    Raises:
        PassNotApplicable: the precondition fails (the message says why).
        ValueError: (tile, rows_per_thread) is not one of ``SHAPES``.
    """
    if (tile, rows_per_thread) not in SHAPES:
        raise ValueError(f"(tile, rows_per_thread) must be one of {SHAPES}, found "
                         f"{(tile, rows_per_thread)!r}")
    ctx, m, w = matched(ctx, _plan, name)
    p = m.grid.parsed
    gx, gy = m.grid.x, m.grid.y
    kt = w.fresh("kTile")
    # rows per thread and the block's height: literals, as an engineer writes them
    kr, kstep = str(rows_per_thread), str(tile // rows_per_thread)
    ys, xs, accs = w.fresh(f"{m.y_name}_tile"), w.fresh(f"{m.x_name}_tile"), w.fresh(f"{m.acc}_r")
    k0, kk, r, yrow = w.fresh(f"{m.var}0"), w.fresh(f"{m.var}{m.var}"), w.fresh("r"), w.fresh("yrow")
    y_t, x_t = dtypes.normalize_c_type(gy.ctype), dtypes.normalize_c_type(gx.ctype)
    decl_type = p.text_of(m.acc_decl.child_by_field_name("type"))
    init = p.text_of(m.acc_decl.children_by_field_name("declarator")[0].child_by_field_name("value"))
    bound = m.bound if re.fullmatch(r"[A-Za-z_]\w*", m.bound) else f"({m.bound})"
    zero_y, zero_x = _zero(m.y_type), _zero(m.x_type)
    y_first = f"blockIdx.y * {kt} + threadIdx.y"
    x_here = f"blockIdx.x * {kt} + threadIdx.x"
    outputs = f"{rows_per_thread} outputs" if rows_per_thread > 1 else "one output"
    w(1, f"// {tile}x{tile} shared tiles of {m.y_name} and {m.x_name}, {outputs} per thread; "
         f"terms added in the original order.")
    w(1, f"constexpr int {kt} = {tile};")
    w(1, structural.block_guard(tile, tile // rows_per_thread))
    if " ".join(m.y_type.split()) == " ".join(m.x_type.split()):
        w(1, f"__shared__ {m.y_type} {ys}[{kt}][{kt}], {xs}[{kt}][{kt}];")
    else:
        w(1, f"__shared__ {m.y_type} {ys}[{kt}][{kt}];")
        w(1, f"__shared__ {m.x_type} {xs}[{kt}][{kt}];")
    if m.init_indexed:  # the output's own initial value: read once, where in range
        w(1, f"{decl_type} {accs}[{kr}];")
        w(1, f"const {x_t} {gx.var} = {x_here};")
        w(1, "#pragma unroll")
        w(1, f"for (int {r} = 0; {r} < {kr}; ++{r}) {{")
        w(2, f"const {y_t} {gy.var} = {y_first} + {r} * {kstep};")
        w(2, f"{accs}[{r}] = ({m.grid.guard}) ? {init} : {_zero(decl_type)};")
        w(1, "}")
    elif _ZERO.match(init.strip()):
        w(1, f"{decl_type} {accs}[{kr}] = {{}};")  # value-initialized: +0, as the literal
    else:
        w(1, f"{decl_type} {accs}[{kr}];")
        w(1, "#pragma unroll")
        w(1, f"for (int {r} = 0; {r} < {kr}; ++{r}) {accs}[{r}] = {init};")
    if not m.init_indexed:
        w(1, f"const {x_t} {gx.var} = {x_here};")
    w(1, f"for (int {k0} = 0; {k0} < {bound}; {k0} += {kt}) {{")
    w(2, "#pragma unroll")
    w(2, f"for (int {r} = 0; {r} < {kr}; ++{r}) {{")
    w(3, f"const int {yrow} = threadIdx.y + {r} * {kstep};")
    w(3, f"const {y_t} {gy.var} = blockIdx.y * {kt} + {yrow};")
    w(3, f"const int {m.var} = {k0} + threadIdx.x;")
    w(3, f"{ys}[{yrow}][threadIdx.x] = ({gy.var} < {gy.bound} && {m.var} < {bound}) ? "
         f"{p.text_of(m.read_y)} : {zero_y};")
    w(2, "}")
    w(2, "#pragma unroll")
    w(2, f"for (int {r} = 0; {r} < {kr}; ++{r}) {{")
    w(3, f"const int {yrow} = threadIdx.y + {r} * {kstep};")
    w(3, f"const int {m.var} = {k0} + {yrow};")
    w(3, f"{xs}[{yrow}][threadIdx.x] = ({m.var} < {bound} && {gx.var} < {gx.bound}) ? "
         f"{p.text_of(m.read_x)} : {zero_x};")
    w(2, "}")
    w(2, "__syncthreads();")
    acc_nodes = [n for n in walk(m.statement) if n.type == "identifier" and p.text_of(n) == m.acc]
    stmt = structural.text_with(p, m.statement, [(m.read_y, f"{ys}[threadIdx.y + {r} * {kstep}][{kk}]"),
                                                 (m.read_x, f"{xs}[{kk}][threadIdx.x]")]
                                + [(n, f"{accs}[{r}]") for n in acc_nodes])
    # A whole tile runs a loop of constant trip count, which the compiler unrolls; the last,
    # partial tile stops at K.
    w(2, f"if ({k0} + {kt} <= {bound}) {{")
    w(3, "#pragma unroll")
    w(3, f"for (int {kk} = 0; {kk} < {kt}; ++{kk}) {{")
    w(4, "#pragma unroll")
    w(4, f"for (int {r} = 0; {r} < {kr}; ++{r}) {{")
    w.text_block(5, stmt)
    w(4, "}")
    w(3, "}")
    w(2, "} else {")
    for pragma in m.pragmas:  # the original loop's hints, on the loop that keeps its bound
        w(3, pragma)
    w(3, f"for (int {kk} = 0; {k0} + {kk} < {bound}; ++{kk}) {{")
    w(4, "#pragma unroll")
    w(4, f"for (int {r} = 0; {r} < {kr}; ++{r}) {{")
    w.text_block(5, stmt)
    w(4, "}")
    w(3, "}")
    w(2, "}")
    w(2, "__syncthreads();")
    w(1, "}")
    w(1, "#pragma unroll")
    w(1, f"for (int {r} = 0; {r} < {kr}; ++{r}) {{")
    w(2, f"const {y_t} {gy.var} = {y_first} + {r} * {kstep};")
    w(2, f"if ({m.grid.guard}) {{")
    for node in m.post:
        accs_in = [n for n in walk(node) if n.type == "identifier" and p.text_of(n) == m.acc]
        w.text_block(3, structural.text_with(p, node, [(n, f"{accs}[{r}]") for n in accs_in]))
    w(2, "}")
    w(1, "}")
    source = w.source()
    launch = dataclasses.replace(
        ctx.launch, block=(str(tile), str(tile // rows_per_thread)),
        grid=(f"ceil_div({gx.bound_spec}, {tile})", f"ceil_div({gy.bound_spec}, {tile})"))
    coalesced = " and coalesced" if all(m.coalesced) else ""
    reuse = (f", and each {m.x_name} value read from shared memory serves {rows_per_thread} "
             f"outputs held in registers" if rows_per_thread > 1 else "")
    explanation = (f"{tile}x{tile} shared-memory tiles: each element of {m.y_name} and "
                   f"{m.x_name} is loaded from global memory once per tile{coalesced} instead "
                   f"of once per thread ({tile}x fewer global loads){reuse}; block "
                   f"{tile}x{tile // rows_per_thread}; same terms added in the same order, so "
                   f"the results are unchanged")
    tags = ("tiled-matmul", f"tile={tile}x{rows_per_thread}", f"block={tile}x{tile // rows_per_thread}")
    return PassResult(source=source, launch=launch, tags=tags, explanation=explanation)
