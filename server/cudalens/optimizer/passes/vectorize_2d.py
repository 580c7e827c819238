"""Pass ``vectorize_2d``: 16-byte loads and stores in a 2D elementwise kernel.

A 2D kernel with one thread per element (``cudalens.optimizer.index2d``: ``col`` on x,
``row`` on y, a bounds guard) whose accesses are ``p[f(row) + col]`` moves 4 bytes per
instruction, and with a 16-wide block a warp covers two half rows. Here each thread takes
four consecutive columns: every buffer indexed with ``col`` (coefficient 1) moves as one
``float4``, buffers indexed by ``row`` alone (a per-row bias) are read as before, and a block
of 64x4 puts a warp on 512 contiguous bytes of one row (CUDA C++ Best Practices Guide, "Coalesced Access to
Global Memory"; NVIDIA developer blog, "CUDA Pro Tip: Increase Performance with Vectorized
Memory Access", 2013).

The vector path is taken per thread when its four columns are in range and every vector
address is 16-byte aligned (so ``cols % 4 != 0``, an offset view or an odd leading dimension
fall back correctly); otherwise the thread runs the original statements for each of its four
columns, under the original guard. Each element is computed by the original statements, so
the results are the original's.

Recognized: float buffers; every access of a vectorized buffer at the same index; a written
buffer written by a top-level ``p[...] = ...;`` statement (a vector store writes all four).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from cudalens.optimizer import index2d, structural
from cudalens.optimizer.affine import Scope, poly_of, split_linear
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.pointer_uses import pointer_uses
from cudalens.kernel_model.syntax import walk
from cudalens.spec import dtypes
from cudalens.spec.model import BufferDecl
from cudalens.spec.poly import Poly

name = "vectorize_2d"

BLOCK = (64, 4)


@dataclasses.dataclass(frozen=True)
class _Match:
    grid: index2d.Grid2D
    vector: tuple[str, ...]  # buffers moved as float4, parameter order
    reads: frozenset[str]
    writes: frozenset[str]
    index_text: dict  # buffer -> its index text (one per vectorized buffer)
    accesses: tuple  # (node, buffer) of every vectorized access
    col_used: bool  # the column index appears outside the vectorized accesses
    locals_: tuple  # declarations of integer locals the indices use, in order


def _fail(msg: str, line: Optional[int] = None) -> index2d.NoMatch:
    return index2d.NoMatch(msg, line)


def _match(ctx: PassContext) -> _Match:
    g = index2d.match(ctx)
    parsed = g.parsed
    scope, local_decls = _index_locals(g)
    pointers = {p.name for p in ctx.kernel.parameters if p.is_pointer}
    top = {(s.start_byte, s.end_byte) for s in g.statements}
    for stmt in g.statements:
        tied = structural.thread_tied(stmt, parsed) or structural.builtin_uses(stmt, parsed)
        if tied:
            raise _fail(f"the body uses {tied}; the rewrite moves elements between threads")
        call = structural.impure_call(stmt, parsed, g.macros)
        if call:
            raise _fail(f"the body calls {call}, which may have side effects")
        for n in walk(stmt):
            if n.type in ("for_statement", "while_statement", "do_statement",
                          "for_range_loop"):
                raise _fail(f"the body has a loop (line {parsed.line_of(n)}): not one "
                            f"element per thread", line=parsed.line_of(n))
            if n.type in ("return_statement", "goto_statement", "break_statement",
                          "continue_statement"):
                raise _fail(f"the body has '{parsed.text_of(n)}' (line {parsed.line_of(n)})",
                            line=parsed.line_of(n))
    vector: dict[str, Poly] = {}
    index_text: dict[str, str] = {}
    reads, writes, accesses, partial = set(), set(), [], {}
    for stmt in g.statements:
        for u in pointer_uses(stmt, parsed, pointers):
            shown = f"'{u.text}' (line {u.line})"
            if u.kind == "escape" or u.form != "subscript" or u.index is None:
                raise _fail(f"{u.name} is used as {shown}; the pass needs every access to be "
                            f"{u.name}[...]", line=u.line)
            p = poly_of(u.index, parsed, scope)
            try:
                coef = split_linear(p, g.x.var)[0] if p is not None else None
            except ValueError:
                coef = None
            scalars = {q.name for q in ctx.kernel.parameters if not q.is_pointer}
            other = sorted(_symbols(p) - scalars - {g.x.var, g.y.var}) if p is not None else []
            if other:
                raise _fail(f"the index of {shown} uses {other[0]}, not only {g.y.var}, "
                            f"{g.x.var} and scalar parameters", line=u.line)
            if coef is None or coef not in (Poly(), Poly.const(1)):
                raise _fail(f"{shown} is not at a fixed offset from {g.x.var}: not a 2D "
                            f"elementwise access", line=u.line)
            if u.kind in ("write", "update"):
                writes.add(u.name)
                assign = u.access.parent
                if assign is None or assign.parent is None or \
                        (assign.parent.start_byte, assign.parent.end_byte) not in top:
                    partial.setdefault(u.name, shown)
            if u.kind in ("read", "update"):
                reads.add(u.name)
            if coef == Poly():
                if u.kind != "read":
                    raise _fail(f"{shown} writes the same element for every {g.x.var}",
                                line=u.line)
                continue
            if u.name in vector and vector[u.name] != p:
                raise _fail(f"{u.name} is accessed at two offsets ({shown} and "
                            f"'{index_text[u.name]}'): one vector per buffer", line=u.line)
            vector[u.name] = p
            index_text[u.name] = parsed.text_of(u.index)
            accesses.append((u.access, u.name))
    if not vector:
        raise _fail(f"no buffer is indexed with {g.x.var}")
    for buf in writes:
        if buf not in vector:
            raise _fail(f"{buf} is written but not indexed with {g.x.var}")
        if buf in partial and buf not in reads:
            raise _fail(f"{buf} is written under a condition or inside another statement "
                        f"({partial[buf]}): a vector store would also write the elements the "
                        f"original leaves untouched")
    order = [p.name for p in ctx.kernel.parameters if p.name in vector]
    for buf in order:
        decl = ctx.spec.param(buf)
        ctype = ctx.kernel.parameter(buf).type
        c_spec = dtypes.spec_type_for_c(ctx.c_type(ctype)) or ""
        if not isinstance(decl, BufferDecl) or dtypes.numpy_dtype(decl.type) != "float32" or \
                dtypes.SPEC_TYPES.get(c_spec) != "float32":
            raise _fail(f"{buf} holds {ctype}; the pass moves float buffers as float4")
    spans = [(n.start_byte, n.end_byte) for n, _ in accesses]
    col_used = any(n.type == "identifier" and parsed.text_of(n) == g.x.var and
                   not any(s <= n.start_byte < e for s, e in spans)
                   for stmt in g.statements for n in walk(stmt))
    return _Match(g, tuple(order), frozenset(reads), frozenset(writes), index_text,
                  tuple(accesses), col_used, local_decls)


def _symbols(p: Poly) -> set[str]:
    return {s for m, _ in p.terms for s in m}


def _index_locals(g: index2d.Grid2D) -> tuple[Scope, tuple]:
    """The scope with the guarded statements' integer locals (``size_t idx = row * n +
    col;``, never assigned again) folded into the indices, and their declarations."""
    parsed = g.parsed
    assigned = set()
    for stmt in g.statements:
        for n in walk(stmt):
            target = n.child_by_field_name("left") if n.type == "assignment_expression" else \
                n.child_by_field_name("argument") if n.type == "update_expression" else None
            if target is not None:
                assigned.add(parsed.text_of(target))
    found, decls = {}, []
    for stmt in g.statements:
        if stmt.type != "declaration":
            continue
        spec = dtypes.spec_type_for_c(" ".join(parsed.text_of(stmt.child_by_field_name("type"))
                                               .split()))
        if spec is None or dtypes.is_float(spec):
            continue
        ds = stmt.children_by_field_name("declarator")
        if len(ds) != 1 or ds[0].type != "init_declarator":
            continue
        var = parsed.text_of(ds[0].child_by_field_name("declarator"))
        init = ds[0].child_by_field_name("value")
        if var not in assigned and poly_of(init, parsed, Scope(g.macros, dict(found))) is not None:
            found[var] = (parsed, init)
            decls.append(stmt)
    return Scope(macros=g.macros, locals=found), tuple(decls)


def _plan(ctx: PassContext):
    early = None
    if ctx.spec.atomics:
        early = "the spec marks the kernel as using atomics"
    return structural.plan(ctx, early, _match, index2d.NoMatch)


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel is a 2D elementwise kernel over float rows, else the reason."""
    return _plan(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """One application (the block is the launch-configuration pass's to vary)."""
    return ({},)


def apply(ctx: PassContext) -> PassResult:
    """The kernel with four columns per thread, block 64x4, grid ``ceil_div(cols, 4 *
    block.x) x`` the original's y grid.

    Raises:
        PassNotApplicable: the precondition fails (the message says why).
    """
    reason, m = _plan(ctx)
    if reason is not None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    g, p = m.grid, m.grid.parsed
    w = structural.Layout(ctx)
    x_t, y_t = dtypes.normalize_c_type(g.x.ctype), dtypes.normalize_c_type(g.y.ctype)
    c4, lane = w.fresh(f"{g.x.var}4"), w.fresh("k")
    regs = {b: w.fresh(f"{b}_v") for b in m.vector}
    col, row = g.x.var, g.y.var
    w(1, "// float4 loads/stores: four consecutive columns per thread, one by one where they "
         "are not all in range or aligned.")
    w(1, f"const {y_t} {row} = blockIdx.y * blockDim.y + threadIdx.y;")
    w(1, f"const {x_t} {c4} = (blockIdx.x * blockDim.x + threadIdx.x) * 4;")
    w(1, f"if ({row} < {g.y.bound} && {c4} + 3 < {g.x.bound}) {{")
    w(2, f"const {x_t} {col} = {c4};")
    for decl in m.locals_:
        w.text_block(2, p.text_of(decl))
    aligned = [f"reinterpret_cast<size_t>(&{b}[{m.index_text[b]}]) % 16 == 0" for b in m.vector]
    w(2, f"if ({aligned[0]}{' &&' if len(aligned) > 1 else ') {'}")
    for i, a in enumerate(aligned[1:], 1):
        w(4, a + (" &&" if i < len(aligned) - 1 else ") {"))
    w(3, f"alignas(16) float {', '.join(f'{regs[b]}[4]' for b in m.vector)};")
    for b in m.vector:
        if b in m.reads:
            w(3, f"*reinterpret_cast<float4*>({regs[b]}) = "
                 f"*reinterpret_cast<const float4*>(&{b}[{m.index_text[b]}]);")
    w(3, "#pragma unroll")
    w(3, f"for (int {lane} = 0; {lane} < 4; ++{lane}) {{")
    body = []
    for stmt in g.statements:
        inside = [(n, f"{regs[b]}[{lane}]") for n, b in m.accesses
                  if stmt.start_byte <= n.start_byte < stmt.end_byte]
        body.append(structural.text_with(p, stmt, inside))
    if m.col_used:
        w(4, f"const {x_t} {col} = {c4} + {lane};")
    for text in body:
        w.text_block(4, text)
    w(3, "}")
    for b in m.vector:
        if b in m.writes:
            w(3, f"*reinterpret_cast<float4*>(&{b}[{m.index_text[b]}]) = "
                 f"*reinterpret_cast<const float4*>({regs[b]});")
    w(3, "return;")
    w(2, "}")
    w(1, "}")
    w(1, "#pragma unroll")
    w(1, f"for (int {lane} = 0; {lane} < 4; ++{lane}) {{")
    w(2, f"const {x_t} {col} = {c4} + {lane};")
    w(2, f"if ({g.guard}) {{")
    for stmt in g.statements:
        w.text_block(3, p.text_of(stmt))
    w(2, "}")
    w(1, "}")
    grid = (f"ceil_div({g.x.bound_spec}, 4 * block.x)",) + tuple(ctx.launch.grid[1:])
    launch = dataclasses.replace(ctx.launch, block=tuple(str(b) for b in BLOCK), grid=grid)
    explanation = (f"float4 loads/stores of {', '.join(m.vector)}: each thread handles four "
                   f"consecutive columns with one 16-byte access per buffer (4x fewer memory "
                   f"instructions) and a 64x4 block puts each warp on 512 contiguous bytes of "
                   f"a row; unaligned or ragged columns go one by one")
    return PassResult(source=w.source(), launch=launch,
                      tags=("vec4-2d", f"block={BLOCK[0]}x{BLOCK[1]}"), explanation=explanation)
