"""Pass ``coarsen_reduce``: a block's tree reduction done by one warp, several elements per lane.

The kernel is a shared-memory tree reduction (``cudalens.optimizer.block_reduction``): block
``b`` of ``B`` threads combines the ``B`` values its threads store in ``s[tid]`` and thread 0
writes the result (``partial[blockIdx.x] = s[0]``, ``atomicAdd(out, s[0])``, ...). With one
element per thread, most of the time goes to the tree's barriers and to launching ``B``
threads for ``B`` loads.

The rewrite launches the same grid with 32-thread blocks: block ``b`` is one warp that
computes what block ``b`` computed. Lane ``l`` runs the original per-thread statements for
the threads ``l, l + 32, ...`` of the original block (``threadIdx.x`` replaced by that
thread's number, ``blockDim.x`` by ``B``), combining the values in a register: ``B / 32``
coalesced loads in flight per lane and no shared memory. Five ``__shfl_down_sync`` steps
combine the warp (CUDA C++ Programming Guide, "Warp Shuffle Functions"; J. Luitjens,
"Faster Parallel Reductions on Kepler", NVIDIA developer blog, 2014; M. Harris, "Optimizing
Parallel Reduction in CUDA", 2007, kernel 7: several elements per thread), and lane 0 runs
the original's final statement with the result. Every output keeps its meaning: the same
elements form each block's value, so per-block partials and atomics on a scalar are the
original's. Float sums are added in another order (within the runner's tolerance); max and
min are exact, and one written as a comparison (``if (s[t + st] > s[t]) s[t] = s[t + st];``)
keeps its comparison: the original's result for inputs without NaN
(``cudalens.optimizer.minmax``).

Applies when ``warp_reduce`` does (a recognized tree, a 1D power-of-two block of 32 to 1024
threads, no y/z indexing) and also: the combine has an identity for the element type (0 for
sums, -/+INFINITY for float max/min), the final statement uses no local of the per-thread
statements and no ``threadIdx``, and the spec's grid does not depend on the block except
through ``block.x`` (replaced by ``B``).

Parameters: ``blocks_per_sm`` (``parameter_space``) and ``vector``: the same rewrite with
16-byte loads (``float4`` for floats, ``double2``, 8 halves or 16 bytes as ``int4``) where the
per-thread statements read one buffer at ``blockIdx.x * B + t`` under one bound test
(``cudalens.optimizer.span_read``). A block takes the vector loop when the bound holds for
its last thread (the original then reads every element of its span, so the vectors read
nothing it does not), the span's address is a multiple of the vector's size (tested at run
time: the pointer may be an offset into an allocation) and the block is the rewrite's 32
threads; each element still runs the user's statements. Other blocks (the ragged last one, a
misaligned buffer, another launch's block) take the scalar loop. Offered besides the scalar
form, not instead of it: the search times both.

``warps_per_block`` ``W`` (8 and 4, with and without ``vector``): the grouped form. One-warp
blocks cap an SM at its resident-block limit (32 on sm_90: 1024 of 2048 threads), so these
launch blocks of ``32 * W`` threads over ``ceil_div(G, W)`` blocks (``G`` the original grid):
warp ``w`` of block ``b`` does what original block ``b * W + w`` did, the same statements
with ``blockIdx.x`` replaced by that number, and writes the same output; a warp whose number
is past ``G`` (the last, partial group) returns, as does every block of another size
(``structural.block_guard``'s contract). Needs ``G`` written over the scalar parameters
(``spec_to_c``) and a final statement free of ``gridDim``. Where the result is per-block
partials it comes first in the parameter space (8 warps with vector loads the expected
best); after the loop forms where it is one atomic total.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

import tree_sitter

from cudalens.optimizer import minmax, structural
from cudalens.optimizer.affine import builtin_field
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.passes import warp_reduce
from cudalens.optimizer.reasons import Reason
from cudalens.kernel_model.syntax import named_children, walk

name = "coarsen_reduce"

WARP = 32
_FLOATS = ("float", "double")


def _identity(combine: str, etype: str) -> Optional[str]:
    base = " ".join(w for w in etype.split() if w not in ("const", "volatile"))
    if combine == "+":
        return "0.0f" if base == "float" else "0"
    if base in _FLOATS and minmax.is_max(combine):
        return "-INFINITY"
    if base in _FLOATS and minmax.is_min(combine):
        return "INFINITY"
    return None


def _declared(stmts, parsed) -> dict[str, tree_sitter.Node]:
    """Locals declared by the top-level ``stmts`` -> their declaration."""
    out = {}
    for s in stmts:
        if s.type == "declaration":
            for d in s.children_by_field_name("declarator"):
                inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                if inner is not None:
                    out[parsed.text_of(inner)] = s
    return out


def spec_to_c(text: str, ctx: PassContext, block_x: int) -> Optional[str]:
    """The spec expression ``text`` (``ceil_div(n, block.x)``) as C over the kernel's scalar
    parameters (``(n + 256 - 1) / 256``), or None when a name is not a size that a scalar
    parameter carries unchanged (``scalar n: int = n``)."""
    import ast

    from cudalens.spec import expr as spec_expr
    from cudalens.spec.model import ScalarDecl

    carried = {}
    for q in ctx.kernel.parameters:
        try:
            decl = ctx.spec.param(q.name)
        except KeyError:
            continue
        if isinstance(decl, ScalarDecl) and not q.is_pointer:
            carried.setdefault(decl.expr.strip(), q.name)
    ops = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Mod: "%",
           ast.LShift: "<<", ast.RShift: ">>"}

    def c(node) -> Optional[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return str(node.value)
        if isinstance(node, ast.Name):
            return carried.get(node.id)
        if isinstance(node, ast.Attribute):
            return str(block_x) if node.attr == "x" else "1"
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            a, b = c(node.left), c(node.right)
            return None if a is None or b is None else f"({a} {ops[type(node.op)]} {b})"
        if isinstance(node, ast.Call) and len(node.args) == 2:
            a, b = c(node.args[0]), c(node.args[1])
            if a is None or b is None:
                return None
            if node.func.id == "ceil_div":
                return f"({a} + {b} - 1) / {b}"
            return f"{node.func.id}({a}, {b})"
        return None

    try:
        out = c(spec_expr.parse(text))
    except spec_expr.ExprError:
        return None
    if out is not None and out.startswith("(") and out.endswith(")") and \
            out.count("(") == 1:
        out = out[1:-1]
    return out


def _atomic_total(m, p) -> Optional[str]:
    """The atomic's name when the final statement is ``atomicAdd(ADDR, s[0]);`` with a
    sum combine and ``ADDR`` free of thread and block indices (the same counter for every
    block, so any grouping of the elements adds up to the same total), else None."""
    cons = m.final.child_by_field_name("consequence")
    if cons.type == "compound_statement" and len(named_children(cons)) == 1:
        cons = named_children(cons)[0]
    if m.combine != "+" or cons.type != "expression_statement" or not named_children(cons):
        return None
    call = named_children(cons)[0]
    if call.type != "call_expression" or \
            p.text_of(call.child_by_field_name("function")) != "atomicAdd":
        return None
    args = named_children(call.child_by_field_name("arguments"))
    if len(args) != 2 or len(m.final_uses) != 1 or \
            (args[1].start_byte, args[1].end_byte) != (m.final_uses[0].start_byte,
                                                       m.final_uses[0].end_byte):
        return None
    if structural.builtin_uses(args[0], p):
        return None
    return "atomicAdd"


def _plan(ctx: PassContext):
    reason = warp_reduce.check(ctx)
    if reason is not None:
        return reason, None, 0
    _, m, bx = warp_reduce._plan(ctx)
    reason = structural.block_dependence(ctx)
    if reason:
        return reason, None, 0
    p = m.parsed
    ident = _identity(m.combine, m.element_type)
    if ident is None:
        return (f"the combine {m.combine} on {m.element_type} has no identity the pass can "
                f"write (sums, and max/min of floats, do)"), None, 0
    cons = m.final.child_by_field_name("consequence")
    local = _declared(m.load, p)
    for n in walk(cons):
        if n.type == "identifier" and p.text_of(n) in local:
            return Reason(
                f"the final statement uses {p.text_of(n)} (line {p.line_of(n)}), a local of "
                f"the per-thread statements", p.line_of(n)), None, 0
        if builtin_field(n, p) and builtin_field(n, p).startswith("threadIdx"):
            return Reason(
                f"the final statement uses threadIdx (line {p.line_of(n)})",
                p.line_of(n)), None, 0
    for stmt in m.load:
        for n in walk(stmt):
            if n.type == "identifier" and p.text_of(n) == "gridDim":
                return Reason(f"the per-thread statements use gridDim (line "
                                            f"{p.line_of(n)})", p.line_of(n)), None, 0
    if any(g.strip() != "1" for g in ctx.launch.grid[1:]):
        return "the spec's grid is not 1D", None, 0
    return None, m, bx


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel is a block tree reduction the pass can give to one warp per
    block, else the reason."""
    return _plan(ctx)[0]


def _blocks_c(ctx: PassContext, bx: int) -> Optional[str]:
    return spec_to_c(ctx.launch.grid[0], ctx, bx)


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """``blocks_per_sm``: None (one warp per original block, always offered) and, where the
    result is one total added with ``atomicAdd`` and the spec's grid can be written in C over
    the scalar parameters, 32 and 16 warps per SM looping over the original blocks (one
    atomic per warp instead of one per original block), 32 first. Then each of those again
    with ``vector`` where the per-thread statements read one guarded span
    (``cudalens.optimizer.span_read``) and the block holds a whole number of vectors per
    lane (``vector_width``): the scalar forms first, so both are timed. ``warps_per_block``
    8 and 4 (vector forms first) where ``_grouped_reason`` allows: before all of those for
    per-block outputs, after them for an atomic total."""
    reason, m, bx = _plan(ctx)
    atomic = m is not None and _atomic_total(m, m.parsed) and _blocks_c(ctx, bx)
    if atomic:
        scalar = ({"blocks_per_sm": 32}, {"blocks_per_sm": 16}, {"blocks_per_sm": None})
    else:
        scalar = ({"blocks_per_sm": None},)
    vector = m is not None and _vector_plan(ctx, m, bx)[0] is None
    grouped: tuple[dict, ...] = ()
    if m is not None and _grouped_reason(ctx, m, bx) is None:
        grouped = tuple({"blocks_per_sm": None, "warps_per_block": g} for g in WARPS_PER_BLOCK)
    if vector:
        grouped = tuple({**g, "vector": True} for g in grouped) + grouped
    space = scalar + (tuple({**s, "vector": True} for s in scalar) if vector else ())
    # several warps per block, vector loads first: the expected best where the result is one
    # output per original block; after the loop forms where it is one atomic total (the loop
    # adds once per warp, the grouped form once per original block)
    return space + grouped if atomic else grouped + space


WARPS_PER_BLOCK = (8, 4)  # warps per block of the grouped form, the expected best first


def _grouped_reason(ctx: PassContext, m, bx: int) -> Optional[str]:
    """None when the grouped form (``warps_per_block``) applies, else why not: it needs the
    original grid in C (each warp tests that its original block exists) and a final
    statement free of ``gridDim`` (the grid changes)."""
    if _blocks_c(ctx, bx) is None:
        return (f"several warps per block: the spec's grid {ctx.launch.grid[0]} is not written "
                f"over the scalar parameters")
    p = m.parsed
    for n in walk(m.final.child_by_field_name("consequence")):
        if n.type == "identifier" and p.text_of(n) == "gridDim":
            return Reason(f"several warps per block: the final statement uses gridDim (line "
                          f"{p.line_of(n)})", p.line_of(n))
    return None


VECTOR_BYTES = 16  # widest load per thread: 128 bits (ld.global.v4)
# CUDA's built-in vector types (CUDA C++ Programming Guide, "Built-in Vector Types") by the
# element type; other element types move as int4 / int2 through a register array
_VECTOR_BASE = {"float": "float", "double": "double", "int": "int", "unsigned int": "uint",
                "unsigned": "uint"}


def vector_width(element_bytes: int, bx: int) -> int:
    """Elements per vector load for ``element_bytes``-byte elements and blocks of ``bx``
    threads: 16 bytes, else 8, whichever gives at least 2 elements and a whole number of
    vectors per lane (``bx`` divisible by 32 times the width); 0 when neither does."""
    for nbytes in (VECTOR_BYTES, VECTOR_BYTES // 2):
        width = nbytes // element_bytes
        if width >= 2 and bx % (WARP * width) == 0:
            return width
    return 0


def _vector_plan(ctx: PassContext, m, bx: int):
    """(None, span, width, element C type, vector type) when the vector form applies, else
    (the reason, None, 0, '', '')."""
    from cudalens.optimizer import span_read

    try:
        span = span_read.match(ctx, list(m.load), m.parsed, set(), bx)
    except span_read.NotSpan as exc:
        return Reason(f"vector loads: {exc}", exc.line), None, 0, "", ""
    q = ctx.kernel.parameter(span.buffer)
    if q.type in ctx.kernel.template_parameters:
        return f"vector loads: {span.buffer} holds the template type {q.type}", None, 0, "", ""
    ctype = " ".join(w for w in q.type.split() if w not in ("const", "volatile"))
    width = vector_width(structural.element_bytes(ctx.spec.param(span.buffer).type), bx)
    if not width:
        return (f"vector loads: a block of {bx} threads holds no whole number of 8- or "
                f"16-byte vectors per lane"), None, 0, "", ""
    nbytes = width * structural.element_bytes(ctx.spec.param(span.buffer).type)
    base = _VECTOR_BASE.get(ctype)
    vec = f"{base}{width}" if base else {16: "int4", 8: "int2"}[nbytes]
    return None, span, width, ctype, vec


def _combine(combine: str, v: str, other: str, temp: Optional[tuple[str, str]] = None) -> str:
    """``v`` combined with ``other`` on one line; a max/min written as a comparison keeps it,
    ``other`` first stored in ``temp`` (type, name) when given (``minmax.combine_text``)."""
    return minmax.combine_text(v, combine, other, temp)


def apply(ctx: PassContext, blocks_per_sm: Optional[int] = None,
          vector: bool = False, warps_per_block: Optional[int] = None) -> PassResult:
    """The one-warp-per-block reduction; block 32, the spec's grid (``block.x`` replaced by
    the original block size), or with ``blocks_per_sm`` a grid of that many one-warp blocks
    per SM looping over the original blocks (``parameter_space`` says when).

    ``vector``: where a block's inputs are all there (the original's bound test holds for its
    last thread) and start 16-byte aligned (tested at run time on the address, since the
    pointer may be an offset into an allocation), each lane loads them ``vector_width`` at a
    time (``float4`` for floats) into a register array and runs the per-thread statements on
    each element; other blocks (the ragged last one, a misaligned buffer) take the scalar
    loop.

    ``warps_per_block`` ``W``: blocks of ``32 * W`` threads over ``ceil_div(G, W)`` blocks
    (``G`` the original grid); warp ``w`` of block ``b`` computes what original block
    ``b * W + w`` computed and does nothing when that block is past ``G`` (the last, partial
    group). The rewrite starts with ``structural.block_guard``: under another block size
    (the user's launch) every block returns before touching memory.

    Raises:
        PassNotApplicable: the precondition fails, ``blocks_per_sm`` is given where the
            result is not one atomic total, or ``vector`` where the loads are not one guarded
            span (the message says why), or ``warps_per_block`` with ``blocks_per_sm`` or
            where ``_grouped_reason`` refuses it.
    """
    reason, m, bx = _plan(ctx)
    if reason is not None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    group = warps_per_block or 1
    if warps_per_block is not None:
        why = _grouped_reason(ctx, m, bx)
        if blocks_per_sm is not None:
            why = "several warps per block and blocks_per_sm do not combine"
        if not 1 <= warps_per_block <= 1024 // WARP:
            why = f"warps_per_block {warps_per_block} is not 1 to {1024 // WARP}"
        if why is not None:
            raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {why}")
    span = None
    if vector:
        why, span, width, vtype, vec = _vector_plan(ctx, m, bx)
        if why is not None:
            raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {why}")
    blocks = None
    if blocks_per_sm is not None:
        blocks = _blocks_c(ctx, bx)
        if not _atomic_total(m, m.parsed) or blocks is None:
            raise PassNotApplicable(f"{name} on {ctx.kernel.name}: looping over the original "
                                    f"blocks needs one total added with atomicAdd and a grid "
                                    f"written over the scalar parameters")
    p = m.parsed
    w = structural.Layout(ctx)
    etype = " ".join(m.element_type.split())
    per_lane = bx // WARP
    v, off = w.fresh("acc"), w.fresh("offset")
    # the original thread's number: the user's copy of threadIdx.x when the statements declare
    # one (its name and type), else a new local
    tid_decl, loop_var, loop_type = None, None, "unsigned int"
    for stmt in m.load:
        if stmt.type != "declaration":
            continue
        ds = stmt.children_by_field_name("declarator")
        if len(ds) == 1 and ds[0].type == "init_declarator" and \
                builtin_field(ds[0].child_by_field_name("value"), p) == "threadIdx.x":
            tid_decl, loop_var = stmt, p.text_of(ds[0].child_by_field_name("declarator"))
            loop_type = " ".join(p.text_of(stmt).split("=")[0].split()[:-1])
            break
    if loop_var is None:
        loop_var, loop_type = w.fresh("t"), "const unsigned int"
    body = [s for s in m.load if s is not tid_decl]
    last = body[-1] if body else None
    direct = None  # 's[tid] = EXPR;' as the last statement, its only store
    if last is not None and last.type == "expression_statement" and \
            sum(1 for u in m.load_uses) == 1:
        expr = named_children(last)[0] if named_children(last) else None
        if expr is not None and expr.type == "assignment_expression" and \
                expr.child_by_field_name("operator").type == "=" and \
                expr.child_by_field_name("left") == m.load_uses[0]:
            direct = expr.child_by_field_name("right")
    x = None if direct is not None else w.fresh("val")

    def temp(base: str) -> Optional[tuple[str, str]]:
        """A constant holding a value a comparison reads twice (conditional kinds only)."""
        return (etype, w.fresh(base)) if minmax.is_conditional(m.combine) else None

    def subst(stmt: tree_sitter.Node, extra=()) -> str:
        reps = [(n, text) for n, text in extra if stmt.start_byte <= n.start_byte < stmt.end_byte]
        outer = [r for r, _ in reps]  # replaced whole: nothing inside them is replaced too
        for n in walk(stmt):
            if any(r.start_byte <= n.start_byte < r.end_byte for r in outer):
                continue
            f = builtin_field(n, p) if n.type == "field_expression" else None
            if f == "threadIdx.x":
                reps.append((n, loop_var))
            elif f == "blockDim.x":
                reps.append((n, str(bx)))
            elif f == "blockIdx.x" and bidx != "blockIdx.x":
                reps.append((n, bidx))
        reps += [(u, x) for u in m.load_uses if stmt.start_byte <= u.start_byte < stmt.end_byte
                 and x is not None]
        return structural.text_with(p, stmt, reps)

    lane, bidx = "threadIdx.x", "blockIdx.x"
    if warps_per_block is not None:
        lane, bidx = w.fresh("lane"), w.fresh("seg")
        how = (f"{vec} loads where the block's inputs are all there and aligned, else one by "
               f"one" if vector else "one by one")
        w(1, f"// {group} warps per block: warp w of block b does what block b * {group} + w "
             f"of {bx} threads did, {per_lane} inputs per lane ({how}), then shuffles.")
        w(1, f"const unsigned int {lane} = threadIdx.x % {WARP};")
        w(1, f"const unsigned int {bidx} = blockIdx.x * {group} + threadIdx.x / {WARP};  "
             f"// the original block")
        # structural.block_guard's test (under another block size every block returns before
        # touching memory) and the last group's: a warp past the original grid leaves whole
        w(1, f"if (blockDim.x != {WARP * group} || {bidx} >= {_blocks_c(ctx, bx)}) return;  "
             f"// written for this block; past the original grid")
    elif blocks_per_sm is None:
        w(1, f"// One warp per block of {bx} inputs: each lane combines {per_lane} of them in "
             f"a register, then warp shuffles.")
    else:
        w(1, f"// Each warp loops over blocks of {bx} inputs, {per_lane} per lane in a "
             f"register, then shuffles and adds its total once.")
    w(1, f"{etype} {v} = {_identity(m.combine, m.element_type)};")
    k = w.fresh("k")
    d = 1
    if blocks is not None:
        nblocks, bidx = w.fresh("blocks"), w.fresh("b")
        w(1, f"const unsigned int {nblocks} = {blocks};  // the original grid")
        w(1, f"for (unsigned int {bidx} = blockIdx.x; {bidx} < {nblocks}; "
             f"{bidx} += gridDim.x) {{")
        d = 2
    def element(depth: int, extra=()) -> None:
        """One original thread's statements, combined into the register."""
        if x is not None:
            w(depth, f"{etype} {x};")
        for stmt in body:
            if stmt is last and direct is not None:
                w.text_block(depth, _combine(m.combine, v, subst(direct, extra), temp("x")))
            else:
                w.text_block(depth, subst(stmt, extra))
        if x is not None:
            w(depth, _combine(m.combine, v, x))

    def scoped(depth: int, thread: str, last_line: str, head: str = "", note: str = "") -> None:
        """``head { THREAD'S NUMBER; the index's declarations; last_line }  // note``: on one
        line where each declaration is one line, else one statement a line."""
        deps = [subst(dep) for dep in span.deps if dep is not tid_decl]
        after = f"  // {note}" if note else ""
        if not any("\n" in t or "//" in t or "/*" in t for t in deps):
            inner = " ".join([f"{loop_type} {loop_var} = {thread};", *deps, last_line])
            w(depth, f"{head}{{ {inner} }}{after}")
            return
        w(depth, head + "{")
        w(depth + 1, f"{loop_type} {loop_var} = {thread};")
        for dep in deps:
            w.text_block(depth + 1, dep)
        w(depth + 1, last_line)
        w(depth, "}" + after)

    if span is not None:
        whole, t0, regs, j = w.fresh("whole"), w.fresh("t0"), w.fresh("elems"), w.fresh("j")
        nbytes = width * structural.element_bytes(ctx.spec.param(span.buffer).type)
        if warps_per_block is None:  # the grouped form's header says it
            w(d, f"// {vec} loads where the block's inputs are all there and start {nbytes}-byte "
                 f"aligned (the address is tested), else one by one")
        # under another block (the user's launch) the lanes' vectors would pass the span
        # (the grouped form's block guard has tested the block already). span_read matched
        # every read at blockIdx.x * B + threadIdx.x: thread t's element is at BLOCK * B + t
        same = "" if warps_per_block is not None else f"blockDim.x == {WARP} && "
        w(d, f"bool {whole} = {same}reinterpret_cast<size_t>(&{span.buffer}[{bidx} * {bx}]) "
             f"% {nbytes} == 0;")
        if span.guard is not None:
            scoped(d, str(bx - 1), f"{whole} = {subst(span.guard)};", f"if ({whole}) ",
                   "the original's bound, for the block's last thread")
        w(d, f"if ({whole}) {{")
        w(d + 1, "#pragma unroll")
        w(d + 1, f"for (int {k} = 0; {k} < {bx // (WARP * width)}; ++{k}) {{")
        w(d + 2, f"const unsigned int {t0} = ({lane} + {k} * {WARP}) * {width};")
        w(d + 2, f"alignas({nbytes}) {vtype} {regs}[{width}];")
        w(d + 2, f"*reinterpret_cast<{vec}*>({regs}) = "
                 f"*reinterpret_cast<const {vec}*>(&{span.buffer}[{bidx} * {bx} + {t0}]);")
        w(d + 2, "#pragma unroll")
        w(d + 2, f"for (int {j} = 0; {j} < {width}; ++{j}) {{")
        w(d + 3, f"{loop_type} {loop_var} = {t0} + {j};")
        element(d + 3, [(r, f"{regs}[{j}]") for r in span.reads])
        w(d + 2, "}")
        w(d + 1, "}")
        w(d, "} else {")
        d += 1
    w(d, "#pragma unroll")
    w(d, f"for (int {k} = 0; {k} < {per_lane}; ++{k}) {{")
    w(d + 1, f"{loop_type} {loop_var} = {lane} + {k} * {WARP};")
    element(d + 1)
    w(d, "}")
    if span is not None:
        d -= 1
        w(d, "}")
    if blocks is not None:
        w(1, "}")
    w(1, f"for (int {off} = {WARP // 2}; {off} > 0; {off} /= 2)")
    w(2, _combine(m.combine, v, f"__shfl_down_sync(0xffffffff, {v}, {off})", temp("other")))
    cons = m.final.child_by_field_name("consequence")
    reps = [(u, v) for u in m.final_uses]
    for n in walk(cons):
        if n.type == "field_expression" and builtin_field(n, p) == "blockDim.x":
            reps.append((n, str(bx)))
        elif n.type == "field_expression" and builtin_field(n, p) == "blockIdx.x" and \
                warps_per_block is not None:
            reps.append((n, bidx))
    final = structural.text_with(p, cons, reps)
    inner = named_children(cons) if cons.type == "compound_statement" else []
    if len(inner) == 1 and inner[0].type != "comment" and "\n" not in p.text_of(inner[0]):
        # '{ one statement; }' on one line
        final = structural.text_with(p, inner[0], [r for r in reps if
                                                   inner[0].start_byte <= r[0].start_byte
                                                   < inner[0].end_byte])
    w.text_block(1, f"if ({lane} == 0) {final}")
    source = w.source()
    grid = tuple(re.sub(r"\bblock\s*\.\s*x\b", str(bx), g) for g in ctx.launch.grid)
    if blocks_per_sm is not None:
        grid = (f"min({grid[0]}, sm_count * {blocks_per_sm})",) + grid[1:]
    if warps_per_block is not None:
        grid = (f"ceil_div({grid[0]}, {group})",) + grid[1:]
    launch = dataclasses.replace(ctx.launch,
                                 block=(str(WARP * group),) + tuple(ctx.launch.block[1:]),
                                 grid=grid, shared="0")
    what = minmax.label(m.combine)
    order = (" Float sums are added in another order (pairs within each lane, then across "
             "the warp): results may differ in the last bits, within the tolerance the "
             "runner checks." if m.combine == "+" else "")
    if minmax.is_conditional(m.combine):
        order = f" For the {what}: {minmax.NAN_CAVEAT}."
    explanation = (f"several elements per thread: each block's {bx}-input {what} is done by "
                   f"one warp, each lane combining {per_lane} coalesced loads in a register "
                   f"and 5 __shfl_down_sync steps combining the warp, instead of {bx} threads, "
                   f"a shared-memory tree and {bx.bit_length()} __syncthreads(); launched as "
                   f"32-thread blocks over the same grid, so block b still writes what the "
                   f"original block b wrote.{order}")
    vec_tags: tuple[str, ...] = ()
    if span is not None:
        vec_tags = (f"vec{width}",)
        loads = bx // (WARP * width)
        explanation += (f" Vector loads: where the block's {bx} inputs are all there (the "
                        f"original's bound holds for its last thread, so it reads each of "
                        f"them) and start {nbytes}-byte aligned (tested at run time on the "
                        f"address: the pointer may be an offset into an allocation), each "
                        f"lane loads {width} consecutive elements per {vec} load, "
                        f"{loads} load{'s' if loads > 1 else ''} instead of {per_lane}, and "
                        f"runs the "
                        f"per-thread statements on each; the ragged last block and a "
                        f"misaligned buffer take the element-by-element loop.")
    if blocks_per_sm is not None:
        explanation += (f" With {blocks_per_sm} one-warp blocks per SM each warp loops over "
                        f"the original blocks and adds its total with one atomicAdd, instead "
                        f"of one atomicAdd on the same address per original block.")
        return PassResult(source=source, launch=launch,
                          tags=("warp-per-block+loop",) + vec_tags +
                          (f"grid={blocks_per_sm}*SMs",),
                          explanation=explanation)
    if warps_per_block is not None:
        explanation += (f" Blocks of {group} warps ({WARP * group} threads) over "
                        f"ceil_div(original grid, {group}) blocks: warp w of block b does what "
                        f"original block b * {group} + w did and writes the same output; a "
                        f"warp past the original grid does nothing. More threads resident "
                        f"per SM than one-warp blocks allow.")
        return PassResult(source=source, launch=launch,
                          tags=("warp-per-block", f"warps={group}") + vec_tags,
                          explanation=explanation)
    return PassResult(source=source, launch=launch, tags=("warp-per-block",) + vec_tags,
                      explanation=explanation)
