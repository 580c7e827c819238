"""Pass ``stencil2d_regs``: a 2D stencil or convolution computes a small tile of outputs per
thread (``RX`` consecutive columns by ``RY`` rows) from a register window loaded with one
vector read of each needed row's centre plus the halo.

The 2D form of ``stencil_regs`` (its module doc gives the reasoning and the sources: several
outputs per thread, V. Volkov, GTC 2010; the built-in vector types and coalescing of the CUDA
C++ Programming Guide and Best Practices Guide). On sm_80/sm_90 a naive 3x3 stencil's
neighbour reads hit in L1; what costs is one thread, nine loads and the bounds tests per
output. Here a thread computes ``RX x RY`` outputs (``RX`` = 16 bytes of elements: 4 floats,
2 doubles; ``RY`` a parameter) from the ``RY + 2 Ry`` rows of ``RX + 2 Rx`` elements around
them (``Rx``, ``Ry`` the halo along each axis): rows ``r0 .. r0 + RY - 1`` share the window's
rows, so a 3x3 stencil loads ``RY + 2`` rows for ``RY`` outputs of a column.

Recognized::

    int col = blockIdx.x * blockDim.x + threadIdx.x;   // the two indices first, either order,
    int row = blockIdx.y * blockDim.y + threadIdx.y;   // any names and integer types
    ...statements without thread builtins (guards, boundary branches, loops, early returns)...

where a pointer parameter ``in`` the kernel only reads is read only as ``in[IDX]`` (or
``__ldg(&in[IDX])``) with ``IDX`` = ``(row + DY) * W + (col + DX)`` as a polynomial (through
locals and macros: ``int r = row + dy; ... in[r * cols + c]``), ``W`` a scalar parameter (the
row pitch), ``DY`` and ``DX`` constants or affine in the variables of ``for`` loops with
constant bounds (``stencil_tile``'s loop ranges), at least two different offsets, halos of at
most ``MAX_RADIUS``. No pointer parameter may be read at an index computed from memory (the
kernel model's data-dependent accesses, ``kernel_model.accesses``), and no windowed buffer may
be written. The spec's block must be two numbers and its grid C over the scalar parameters.

The rewrite keeps the statements after the indices twice, each as a lambda of the indices:
``orig(col, row)`` as written, and ``near(col, row, k)``, whose reads ``in[IDX]`` become
``in_win[k + DY * P + DX]`` (``P = RX + 2 Rx`` the window's pitch, ``k`` the output's slot;
loops over the offsets get ``#pragma unroll`` so the slots are constants and the window
stays in registers). A thread steps over chunks ``(c0, r0) = (RX * cx, RY * cy)`` of the
original's ``grid * block`` threads (a 2D grid-stride loop) and:

- where the window of every windowed buffer lies inside it (its length from the spec, tested
  in 64-bit at run time) and each row's centre is 16-byte aligned (the pointer and
  ``W % RX`` tested at run time: the pointer may be an offset into an allocation), loads the
  windows (one vector load per row plus ``Rx`` scalars on each side) and calls ``near`` per
  output;
- elsewhere (the image's first and last rows, a misaligned pointer or pitch) calls ``orig``.

Each output gets the same values in the same order with the same weights, through the
original's own statements and boundary branches, so results are bit for bit the
original's. Where an output ``out`` is written only as ``out[row * Wo + col] = E;`` and never
read, ``near`` keeps ``E`` in a register (with a bit saying it was written) and the ``RX``
results of a row are stored with one vector store when all ``RX`` were written and the
store is 16-byte aligned (tested at run time), else one scalar store per written output.
The threads step over the original's indices, so the rewrite is correct under its new launch
(``ceil_div(GX, RX)`` by ``ceil_div(GY, RY)`` blocks of the user's block) and under the
user's own (the extra threads do nothing: a drop-in, ``cudalens.dropin``).

Parameters: ``ry`` (``RY``), 2 first, then 4 and 1.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.kernel_model.edits import Edit, apply_edits, line_indent
from cudalens.kernel_model.loops import for_header
from cudalens.kernel_model.model import UnreadableBody, readable_body
from cudalens.kernel_model.syntax import Parsed, named_children, walk
from cudalens.optimizer import structural
from cudalens.optimizer.affine import Scope, is_global_index, poly_of, split_linear
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.index2d import NoMatch
from cudalens.optimizer.interior import Box, prove_guards, unused_declarations
from cudalens.optimizer.macros import file_macros
from cudalens.optimizer.passes import stencil_regs, stencil_tile
from cudalens.optimizer.passes.coarsen_reduce import spec_to_c
from cudalens.optimizer.pointer_uses import pointer_uses
from cudalens.spec import expr as spec_expr
from cudalens.spec.model import BufferDecl
from cudalens.spec.poly import Poly

name = "stencil2d_regs"

ROWS = (2, 4, 1)  # RY: the default first
MAX_RADIUS = 3
VECTOR_BYTES = 16
_VECTORS = {"float": ("float4", 4), "double": ("double2", 2), "int": ("int4", 4),
            "unsigned int": ("uint4", 4), "unsigned": ("uint4", 4)}
_COMPONENTS = "xyzw"


@dataclass(frozen=True)
class _Read:
    node: tree_sitter.Node  # the node replaced (subscript or __ldg call)
    dy: Poly
    dx: Poly


@dataclass(frozen=True)
class _Window:
    buffer: str
    ctype: str
    pitch: str  # W, a scalar parameter
    reads: tuple[_Read, ...]
    dy: tuple[int, int]
    dx: tuple[int, int]
    length: str


@dataclass(frozen=True)
class _Store:
    buffer: str
    ctype: str
    pitch: str
    writes: tuple[tree_sitter.Node, ...]  # the assignment expressions out[row * W + col] = E


@dataclass(frozen=True)
class _Match:
    parsed: Parsed
    col: str
    col_type: str
    row: str
    row_type: str
    decls: tuple[tree_sitter.Node, tree_sitter.Node]
    statements: tuple[tree_sitter.Node, ...]
    windows: tuple[_Window, ...]
    stores: tuple[_Store, ...]
    body: tree_sitter.Node
    scope: Scope
    ranges: dict


def _fail(msg: str, line: Optional[int] = None) -> NoMatch:
    return NoMatch(msg, line)


def _index_decl(stmt: tree_sitter.Node, parsed: Parsed, scope: Scope,
                axis: str) -> Optional[tuple[str, str]]:
    """(name, C type) when ``stmt`` declares ``blockIdx.A * blockDim.A + threadIdx.A``."""
    if stmt.type != "declaration":
        return None
    decls = stmt.children_by_field_name("declarator")
    if len(decls) != 1 or decls[0].type != "init_declarator":
        return None
    d = decls[0].child_by_field_name("declarator")
    if d is None or d.type != "identifier" or not is_global_index(
            poly_of(decls[0].child_by_field_name("value"), parsed, scope), axis):
        return None
    t = stmt.child_by_field_name("type")
    return parsed.text_of(d), " ".join(parsed.text_of(t).split()) if t is not None else "int"


def _scalar_params(ctx: PassContext) -> set[str]:
    return {q.name for q in ctx.kernel.parameters if not q.is_pointer}


def _pitch_split(p: Optional[Poly], col: str, row: str,
                 scalars: set[str]) -> Optional[tuple[str, Poly, Poly]]:
    """(W, DY, DX) for ``p == (row + DY) * W + (col + DX)``, W a scalar parameter, DY and DX
    free of ``row``, ``col`` and W; else None."""
    if p is None:
        return None
    try:
        c_col, rest = split_linear(p, col)
        c_row, rest = split_linear(rest, row)
    except ValueError:
        return None
    if c_col != Poly.const(1) or len(c_row.terms) != 1:
        return None
    (mono, coef), = c_row.terms
    if coef != 1 or len(mono) != 1 or mono[0] not in scalars:
        return None
    pitch = mono[0]
    try:
        dy, dx = split_linear(rest, pitch)
    except ValueError:
        return None
    if {col, row, pitch} & (dy.symbols | dx.symbols):
        return None
    return pitch, dy, dx


def _read_windows(ctx: PassContext, parsed: Parsed, body: tree_sitter.Node, m_col: str,
                  m_row: str, scope: Scope, ranges: dict) -> tuple[list[_Window], list]:
    scalars = _scalar_params(ctx)
    windows, reasons = [], []
    for q in ctx.kernel.parameters:
        if not q.is_pointer:
            continue
        uses = pointer_uses(body, parsed, {q.name})
        if not uses:
            continue
        if any(u.kind != "read" for u in uses):
            reads_nearby = [u for u in uses if u.kind == "read" and u.index is not None and
                            _pitch_split(poly_of(u.index, parsed, scope), m_col, m_row,
                                         scalars) is not None]
            if reads_nearby:
                w = next(u for u in uses if u.kind != "read")
                raise _fail(f"{q.name} is read around ({m_row}, {m_col}) and also written "
                            f"('{w.text}', line {w.line}): a register window of it would "
                            f"miss what other outputs write; the pass windows inputs that "
                            f"do not change", line=w.line)
            continue
        try:
            windows.append(_window(ctx, parsed, q.name, uses, m_col, m_row, scope, ranges,
                                   scalars))
        except NoMatch as exc:
            reasons.append(exc)
    return windows, reasons


def _window(ctx, parsed, buffer, uses, col, row, scope, ranges, scalars) -> _Window:
    reads, dys, dxs, pitches = [], [], [], set()
    for u in uses:
        if u.form != "subscript" or u.index is None:
            raise _fail(f"{buffer} is used as '{u.text}' (line {u.line}), not only read as "
                        f"{buffer}[({row} + dy) * W + ({col} + dx)]", line=u.line)
        got = _pitch_split(poly_of(u.index, parsed, scope), col, row, scalars)
        dy = stencil_tile._offset_range(got[1], ranges) if got else None  # noqa: SLF001
        dx = stencil_tile._offset_range(got[2], ranges) if got else None  # noqa: SLF001
        if dy is None or dx is None:
            raise _fail(f"the read '{u.text}' (line {u.line}) is not {buffer}[({row} + dy) * W "
                        f"+ ({col} + dx)] with W a scalar parameter and dy, dx constants or "
                        f"constant-bound loop variables", line=u.line)
        pitches.add(got[0])
        dys.append(dy)
        dxs.append(dx)
        reads.append(_Read(stencil_tile._read_node(u.access, parsed), got[1], got[2]))  # noqa: SLF001
    if len(pitches) != 1:
        raise _fail(f"{buffer} is read with different row pitches ({', '.join(sorted(pitches))})")
    y = (min(a for a, _ in dys), max(b for _, b in dys))
    x = (min(a for a, _ in dxs), max(b for _, b in dxs))
    if y[0] == y[1] and x[0] == x[1]:
        raise _fail(f"every read of {buffer} is at the same offset from ({row}, {col}): no "
                    f"neighbours to share")
    radius = max(-y[0], y[1], -x[0], x[1], 0)
    if radius > MAX_RADIUS:
        raise _fail(f"the reads of {buffer} reach {radius} elements from ({row}, {col}); the "
                    f"register window holds halos of at most {MAX_RADIUS}")
    decl = ctx.spec.param(buffer)
    if not isinstance(decl, BufferDecl) or decl.role != "in":
        raise _fail(f"the spec does not call {buffer} an input")
    ctype = " ".join(ctx.kernel.parameter(buffer).type.split())
    if ctype not in _VECTORS:
        raise _fail(f"{buffer} holds {ctype}; the window is loaded with float4, double2, int4 "
                    f"or uint4")
    return _Window(buffer, ctype, pitches.pop(), tuple(reads), y, x,
                   stencil_tile._length_in_kernel(ctx, buffer))  # noqa: SLF001


def _stores(ctx: PassContext, parsed: Parsed, body: tree_sitter.Node, col: str, row: str,
            scope: Scope, width: int) -> list[_Store]:
    """The outputs written only as ``out[row * W + col] = E;`` (never read, elements of the
    window's width): their ``RX`` results of a row can go out in one vector store."""
    scalars = _scalar_params(ctx)
    out = []
    for q in ctx.kernel.parameters:
        if not q.is_pointer:
            continue
        uses = pointer_uses(body, parsed, {q.name})
        if not uses or any(u.kind != "write" or u.form != "subscript" for u in uses):
            continue
        ctype = " ".join(q.type.split())
        if _VECTORS.get(ctype, (None, 0))[1] != width:
            continue
        writes, pitches = [], set()
        for u in uses:
            got = _pitch_split(poly_of(u.index, parsed, scope), col, row, scalars)
            a = u.access.parent
            if got is None or got[1] != Poly() or got[2] != Poly() or a is None or \
                    a.type != "assignment_expression" or \
                    a.child_by_field_name("operator").type != "=" or \
                    a.child_by_field_name("left") != u.access or \
                    a.parent is None or a.parent.type != "expression_statement":
                break
            writes.append(a)
            pitches.add(got[0])
        else:
            if len(pitches) == 1:
                out.append(_Store(q.name, ctype, pitches.pop(), tuple(writes)))
    return out


def _match(ctx: PassContext) -> _Match:
    try:
        parsed, body = readable_body(ctx)
    except UnreadableBody as exc:
        raise _fail(str(exc)) from None
    stmts = named_children(body)
    scope0 = Scope(macros=file_macros(parsed))
    expected = ("expected the body to start with the two global indices 'int col = blockIdx.x "
                "* blockDim.x + threadIdx.x;' and 'int row = blockIdx.y * blockDim.y + "
                "threadIdx.y;'")
    if len(stmts) < 3:
        raise _fail(expected)
    got = {}
    for stmt in stmts[:2]:
        for axis in "xy":
            d = _index_decl(stmt, parsed, scope0, axis)
            if d is not None:
                got[axis] = d
    if set(got) != {"x", "y"}:
        bad = next(s for s in stmts[:2] if _index_decl(s, parsed, scope0, "x") is None and
                   _index_decl(s, parsed, scope0, "y") is None) if len(got) < 2 else stmts[1]
        text = " ".join(parsed.text_of(bad).split())
        text = text if len(text) <= 60 else text[:57] + "..."
        raise _fail(f"{expected}, found '{text}' at line {parsed.line_of(bad)}",
                    line=parsed.line_of(bad))
    (col, col_type), (row, row_type) = got["x"], got["y"]
    rest = stmts[2:]
    for stmt in rest:
        tied = structural.thread_tied(stmt, parsed)
        if tied:
            raise _fail(f"the body uses {tied}; threads cooperate already")
        call = structural.impure_call(stmt, parsed, scope0.macros)
        if call:
            raise _fail(f"the body calls {call}, which the pass cannot follow")
        for n in walk(stmt):
            if n.type == "identifier" and parsed.text_of(n) in structural.BUILTINS:
                raise _fail(f"the statements after the indices use {parsed.text_of(n)} (line "
                            f"{parsed.line_of(n)}): each thread now computes several outputs",
                            line=parsed.line_of(n))
    assigned = stencil_tile._assigned(body, parsed)  # noqa: SLF001
    for v in (col, row):
        if v in assigned:
            raise _fail(f"the body changes {v}; the pass needs one output per thread")
    gather = stencil_tile._gather(ctx, col)  # noqa: SLF001
    if gather is not None:
        raise gather
    local = stencil_tile._locals(body, parsed, col, assigned)  # noqa: SLF001
    local.pop(row, None)
    scope = Scope(macros=scope0.macros, locals=local)
    ranges = stencil_tile._loop_ranges(body, parsed, scope0, assigned)  # noqa: SLF001
    windows, reasons = _read_windows(ctx, parsed, body, col, row, scope, ranges)
    if not windows:
        if reasons:
            raise reasons[0]
        raise _fail("no pointer parameter is only read: nothing to hold in registers")
    widths = {_VECTORS[w.ctype][1] for w in windows}
    if len(widths) != 1:
        raise _fail("the windowed buffers hold elements of different sizes")
    stores = _stores(ctx, parsed, body, col, row, scope, widths.pop())
    return _Match(parsed, col, col_type, row, row_type, (stmts[0], stmts[1]), tuple(rest),
                  tuple(windows), tuple(stores), body, scope, ranges)


def _user_block(ctx: PassContext) -> Optional[tuple[int, int]]:
    b = [t.strip() for t in ctx.launch.block] + ["1"] * (2 - len(ctx.launch.block))
    if len(b) > 3 or (len(b) == 3 and b[2] != "1") or not all(t.isdigit() for t in b[:2]):
        return None
    x, y = int(b[0]), int(b[1])
    return (x, y) if 1 <= x * y <= 1024 and x >= 1 and y >= 1 else None


def _grid_c(ctx: PassContext, axis: int, block: tuple[int, int]) -> Optional[str]:
    if len(ctx.launch.grid) <= axis:
        return "1"
    text = re.sub(r"\bblock\s*\.\s*x\b", str(block[0]), ctx.launch.grid[axis])
    text = re.sub(r"\bblock\s*\.\s*y\b", str(block[1]), text)
    return spec_to_c(text, ctx, block[0])


def _early(ctx: PassContext) -> Optional[str]:
    body = ctx.text[ctx.kernel.body_start_byte:ctx.kernel.body_end_byte]
    if re.search(r"\b(threadIdx|blockIdx|blockDim|gridDim)\s*\.\s*z\b", body):
        return "the kernel indexes along z; the pass computes 2D stencils"
    if not re.search(r"\bblockIdx\s*\.\s*y\b", body):
        return "the kernel does not index along y; stencil_regs covers 1D stencils"
    if ctx.spec.atomics:
        return "the spec marks the kernel as using atomics"
    return None


def _plan(ctx: PassContext):
    reason, m = structural.plan(ctx, _early(ctx), _match, NoMatch)
    if reason is not None:
        return reason, None, None, None
    block = _user_block(ctx)
    if block is None:
        return (f"the spec's block ({', '.join(ctx.launch.block)}) is not two numbers"), \
            None, None, None
    grid = (_grid_c(ctx, 0, block), _grid_c(ctx, 1, block))
    if None in grid or len(ctx.launch.grid) > 2 and ctx.launch.grid[2].strip() != "1":
        return (f"the spec's grid ({', '.join(ctx.launch.grid)}) cannot be written over the "
                f"kernel's scalar parameters: the threads could not step over the original's "
                f"indices"), None, None, None
    return None, m, block, grid


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel is a 2D stencil whose outputs the pass can compute several per
    thread from a register window, else the reason (with its line where one is named)."""
    return _plan(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """``ry`` (rows per thread): 2 first, then 4 and 1."""
    return tuple({"ry": r} for r in ROWS)


def _poly_text(p: Poly) -> str:
    """C text of an integer polynomial of loop variables (``dy * 6 + dx - 7``); ``''`` for
    zero, else with a leading `` + `` or `` - ``."""
    out = ""
    for mono, coef in sorted(p.terms, key=lambda t: (len(t[0]) == 0, t[0])):
        sign, mag = ("-" if coef < 0 else "+"), abs(coef)
        if not mono:
            term = str(mag)
        else:
            term = " * ".join(mono) + ("" if mag == 1 else f" * {mag}")
        out += f" {sign} {term}"
    return out


def _int_enough(ctx: PassContext, block: tuple[int, int], m: _Match) -> bool:
    """Whether ``int`` holds the chunk counters and every window index at the spec's sizes."""
    from cudalens.optimizer.index_width import INT32_MAX, spec_sizes
    from cudalens.spec.expr import Dim3

    sizes = spec_sizes(ctx)
    if sizes is None:
        return False
    env = {**sizes, "block": Dim3(block[0], block[1], 1)}
    try:
        grids = [spec_expr.evaluate(g, env) for g in ctx.launch.grid[:2]]
        lengths = [spec_expr.evaluate(ctx.spec.param(w.buffer).length, sizes)
                   for w in m.windows]
    except spec_expr.ExprError:
        return False
    if not all(isinstance(v, int) for v in grids + lengths):
        return False
    try:
        pitches = [spec_expr.evaluate(ctx.spec.param(w.pitch).expr, sizes) for w in m.windows]
    except (spec_expr.ExprError, KeyError):
        return False
    if not all(isinstance(v, int) for v in pitches):
        return False
    # the largest index the window test forms: past the original's last row and column by
    # at most the tile and the halo
    ty, tx = (g * b for g, b in zip(grids, block))
    reach = max(ROWS) + 2 * MAX_RADIUS
    return all(2 * g * b + 64 < INT32_MAX for g, b in zip(grids, block)) and \
        all(v + 64 < INT32_MAX for v in lengths) and \
        all((ty + reach) * p + tx + reach < INT32_MAX for p in pitches)


def _deferred_stores(p: Parsed, m: _Match, edits: list[Edit], vals: dict, j: str,
                     mask: str) -> list[Edit]:
    """``edits`` with each store ``out[row * W + col] = E;`` of an output stored per row
    (``_stores``) rewritten to keep ``E`` (with the edits inside it) in the row's register
    slot ``j`` and set its bit in ``mask``."""
    edits = list(edits)
    for s in m.stores:
        for a in s.writes:
            right = a.child_by_field_name("right")
            inner = [e for e in edits if right.start_byte <= e.start and e.end <= right.end_byte]
            edits = [e for e in edits if e not in inner]
            value = apply_edits(p.data[right.start_byte:right.end_byte],
                                [Edit(e.start - right.start_byte, e.end - right.start_byte,
                                      e.text) for e in inner])
            edits.append(Edit(a.start_byte, a.end_byte,
                              f"({vals[s.buffer]}[{j}] = ({value}), {mask} |= 1u << {j})"))
    return edits


def _declared_types(m: _Match, ctx: PassContext) -> dict[str, str]:
    """name -> declared C type of the indices, the scalar parameters, the loop variables
    and the locals of the statements (a name declared twice is left out)."""
    p = m.parsed
    types = {m.col: m.col_type, m.row: m.row_type}
    types.update({q.name: " ".join(q.type.split()) for q in ctx.kernel.parameters
                  if not q.is_pointer})
    counts: dict[str, int] = {}
    for n in (n for s in m.statements for n in walk(s)):
        if n.type == "for_statement":
            h = for_header(n, p)
            if h is not None and h.ctype:
                counts[h.var] = counts.get(h.var, 0) + 1
                types[h.var] = " ".join(h.ctype.split())
        elif n.type == "declaration":
            t = n.child_by_field_name("type")
            if t is None or (n.parent is not None and n.parent.type == "for_statement"):
                continue
            for d in n.children_by_field_name("declarator"):
                name = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                if name is not None and name.type == "identifier":
                    word = p.text_of(name)
                    counts[word] = counts.get(word, 0) + 1
                    types[word] = " ".join(p.text_of(t).split())
    return {k: v for k, v in types.items() if counts.get(k, 1) == 1}


def _box(ctx: PassContext, m: _Match, c0: str, r0: str, rx: int, ry: int) -> Box:
    """The tile a thread computes: ``col`` over ``c0 .. c0 + RX - 1``, ``row`` over
    ``r0 .. r0 + RY - 1``, the constant-bound loops over their ranges."""
    return Box(tile={m.col: (c0, rx), m.row: (r0, ry)}, loops=dict(m.ranges),
               scalars=frozenset(_scalar_params(ctx)), types=_declared_types(m, ctx))


@dataclass(frozen=True)
class _Hoisted:
    buffer: str
    ctype: str
    name: str  # the register array
    low: int  # its first element is buffer[low]
    count: int
    edits: tuple[Edit, ...]


MAX_HOISTED = 64  # elements of one input kept in registers per tile


def _hoisted(ctx: PassContext, m: _Match, proofs, w, windowed: set[str]) -> list[_Hoisted]:
    """The inputs read only at indices of constant-bound loop variables (a filter's
    weights) where every read runs for every output of a proved tile and loop iteration
    (``Proofs.executed``): the original then reads each of those elements for the tile, so
    loading them once into registers reads nothing it does not."""
    import itertools

    p = m.parsed
    out = []
    for q in ctx.kernel.parameters:
        if not q.is_pointer or q.name in windowed:
            continue
        uses = pointer_uses(m.body, p, {q.name})
        if not uses or any(u.kind != "read" or u.form != "subscript" for u in uses):
            continue
        ctype = " ".join(ctx.kernel.parameter(q.name).type.split())
        values: set[int] = set()
        edits = []
        box = _box(ctx, m, "0", "0", 1, 1)
        for u in uses:
            poly = poly_of(u.index, p, m.scope)
            if poly is None or not poly.symbols <= set(m.ranges) or                     not proofs.executed(u.access, m.body, box, p):
                break
            names = sorted(poly.symbols)
            spans = [range(m.ranges[v][0], m.ranges[v][1] + 1) for v in names]
            if 1 + sum(len(r) for r in spans) > 4 * MAX_HOISTED:
                break
            for combo in itertools.product(*spans):
                env = dict(zip(names, combo))
                values.add(poly.substitute(lambda s, env=env: Poly.const(env[s])).constant)
            edits.append((u, p.text_of(u.index)))
        else:
            if not values:
                continue
            low, high = min(values), max(values)
            if low < 0 or high - low + 1 > MAX_HOISTED or len(values) != high - low + 1:
                continue
            name = w.fresh(f"{q.name}_reg")
            out.append(_Hoisted(q.name, ctype, name, low, high - low + 1, tuple(
                Edit(stencil_tile._read_node(u.access, p).start_byte,  # noqa: SLF001
                     stencil_tile._read_node(u.access, p).end_byte,  # noqa: SLF001
                     f"{name}[({text}) - {low}]" if low else f"{name}[{text}]")
                for u, text in edits)))
    return out


def apply(ctx: PassContext, ry: int = ROWS[0]) -> PassResult:
    """The register-window 2D stencil with ``ry`` rows of outputs per thread (module doc).

    Raises:
        PassNotApplicable: the precondition fails (the message says why).
        ValueError: ``ry`` is not 1, 2 or 4.
    """
    if ry not in ROWS:
        raise ValueError(f"ry must be one of {sorted(ROWS)}, found {ry!r}")
    reason, m, block, grid = _plan(ctx)
    if reason is not None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    p = m.parsed
    w = structural.Layout(ctx)
    vec, rx = _VECTORS[m.windows[0].ctype]
    ry_lo = max(max(-x.dy[0], 0) for x in m.windows)
    ry_hi = max(max(x.dy[1], 0) for x in m.windows)
    rx_lo = max(max(-x.dx[0], 0) for x in m.windows)
    rx_hi = max(max(x.dx[1], 0) for x in m.windows)
    pitch_w = rx + rx_lo + rx_hi
    rows_w = ry + ry_lo + ry_hi
    ctype = "int" if _int_enough(ctx, block, m) else "long long"
    tx, ty, cx, cy, c0, r0, i, j, k = (w.fresh("tx"), w.fresh("ty"), w.fresh("cx"),
                                       w.fresh("cy"), w.fresh("c0"), w.fresh("r0"),
                                       w.fresh("i"), w.fresh("j"), w.fresh("k"))
    orig, near = w.fresh("orig"), w.fresh("near")
    wins = {x.buffer: w.fresh(f"{x.buffer}_win") for x in m.windows}
    vals = {s.buffer: w.fresh(f"{s.buffer}_r") for s in m.stores}
    mask = w.fresh("wrote")
    # the window copy of the statements: reads from the registers, stores deferred
    reads: list[Edit] = []
    for x in m.windows:
        for r in x.reads:
            off = r.dy * Poly.const(pitch_w) + r.dx
            reads.append(Edit(r.node.start_byte, r.node.end_byte,
                              f"{wins[x.buffer]}[{k}{_poly_text(off)}]"))
    for n in (n for s in m.statements for n in walk(s)):
        if n.type != "for_statement" or for_header(n, p) is None:
            continue
        prev = n.prev_sibling
        if not (prev is not None and prev.type.startswith("preproc") and
                "unroll" in p.text_of(prev)):
            reads.append(Edit(n.start_byte, n.start_byte,
                              "#pragma unroll\n" + line_indent(p.data, n.start_byte)))
    edits = _deferred_stores(p, m, reads, vals, j, mask)
    # the interior copy: guards proved over the whole tile written as constants, reads of
    # small constant-indexed inputs (the weights) from registers loaded once per tile
    proofs = prove_guards(list(m.statements), p, m.scope, _box(ctx, m, c0, r0, rx, ry))
    regs = _hoisted(ctx, m, proofs, w, {x.buffer for x in m.windows}) if proofs.edits else []
    inner = None
    if proofs.edits:
        taken = reads + proofs.edits + [e for h in regs for e in h.edits]
        taken += unused_declarations(list(m.statements), p, taken)
        inner = _deferred_stores(p, m, taken, vals, j, mask)
    stmts = list(m.statements)
    first_indent = line_indent(p.data, stmts[0].start_byte)
    plain = stencil_regs._statements_text(p, stmts, [])  # noqa: SLF001
    windowed = stencil_regs._statements_text(p, stmts, edits)  # noqa: SLF001
    unit, base = w.unit, w.base
    w(1, f"// {rx} x {ry} outputs per thread: one {vec} load per window row and the halo in "
         f"registers serve the neighbour reads")
    w(1, f"const {ctype} {tx} = ({grid[0]}) * {block[0]};  // the original's threads along x")
    w(1, f"const {ctype} {ty} = ({grid[1]}) * {block[1]};  // and along y")
    w(1, f"auto {orig} = [&]({m.col_type} {m.col}, {m.row_type} {m.row}) {{")
    w.lines += stencil_regs._reindent(plain, base + unit * 2, first_indent)  # noqa: SLF001
    w(1, "};")
    w(1, f"for ({ctype} {cy} = blockIdx.y * blockDim.y + threadIdx.y; {cy} * {ry} < {ty}; "
         f"{cy} += gridDim.y * blockDim.y) {{")
    w(2, f"for ({ctype} {cx} = blockIdx.x * blockDim.x + threadIdx.x; {cx} * {rx} < {tx}; "
         f"{cx} += gridDim.x * blockDim.x) {{")
    w(3, f"const {ctype} {c0} = {cx} * {rx}, {r0} = {cy} * {ry};")
    # the original's threads only: a chunk may reach past them where RX, RY do not divide
    # the block
    lim_x = "" if block[0] % rx == 0 else f"{c0} + {j} < {tx}"
    lim_y = "" if block[1] % ry == 0 else f"{r0} + {i} < {ty}"
    # the window's first element at or past the buffer's start (each index at least the
    # halo: also right where the pitch is unsigned), its last one before the end
    lo_atoms = [c for c in (f"{r0} >= {ry_lo}" if ry_lo else "",
                            f"{c0} >= {rx_lo}" if rx_lo else "") if c]
    lo = " && ".join(lo_atoms)
    conds = [lo] if lo else []
    for x in m.windows:
        hi = f"({r0} + {ry - 1 + ry_hi}) * {x.pitch} + {c0} + {rx - 1 + rx_hi}"
        conds.append(f"reinterpret_cast<size_t>({x.buffer}) % {VECTOR_BYTES} == 0 && "
                     f"{x.pitch} > 0 && {x.pitch} % {rx} == 0 && {hi} < {x.length}")
    if inner is None:
        w(3, f"if ({' && '.join(conds)}) {{")
    else:
        # the interior copy only: a tile at the edges (or misaligned) goes output by output
        # through the original, which is rare enough that a second windowed copy with the
        # original's tests does not pay for its lines
        # the window's own tests already say r0 >= 1, c0 >= 1 where the proofs need them
        extra = [c for c in proofs.conditions if c not in lo_atoms]
        if extra:
            w(3, f"if ({' && '.join(conds)} &&")
            w(5, " && ".join(f"({c})" if "||" in c else c for c in extra) + ") {")
        else:
            w(3, f"if ({' && '.join(conds)}) {{")
        w(4, "// every guard holds for the whole tile (tested once here): the interior copy")
    for x in m.windows:
        parts = []
        for q in range(rows_w):
            rb = w.fresh(f"{x.buffer}_row")
            v = w.fresh(f"{x.buffer}_v")
            off = q - ry_lo
            at = r0 if off == 0 else f"({r0} {'-' if off < 0 else '+'} {abs(off)})"
            w(4, f"const {ctype} {rb} = {at} * {x.pitch} + {c0};")
            w(4, f"const {vec} {v} = *reinterpret_cast<const {vec}*>(&{x.buffer}[{rb}]);")
            parts += [f"{v}.{_COMPONENTS[e]}" if 0 <= e < rx else
                      f"{x.buffer}[{rb} {'-' if e < 0 else '+'} {abs(e)}]"
                      for e in range(-rx_lo, rx + rx_hi)]
        for q in range(rows_w):
            row_parts = ", ".join(parts[q * pitch_w:(q + 1) * pitch_w])
            head = f"const {x.ctype} {wins[x.buffer]}[{rows_w * pitch_w}] = {{" if q == 0 else ""
            w(4 if q == 0 else 5, head + row_parts + ("," if q + 1 < rows_w else "};"))
    for s in m.stores:
        w(4, f"{s.ctype} {vals[s.buffer]}[{rx}];")
    if m.stores:
        w(4, f"unsigned {mask} = 0;")
    lambda_head = f"[&]({m.col_type} {m.col}, {m.row_type} {m.row}, int {k}, int {j}) {{"

    def rows_loop(fn: str, d: int) -> None:
        """The tile's rows: each output through ``fn``, then the row's stores."""
        w(d, "#pragma unroll")
        w(d, f"for (int {i} = 0; {i} < {ry}; ++{i}) {{")
        if lim_y:
            w(d + 1, f"if (!({lim_y})) break;")
        if m.stores:
            w(d + 1, f"{mask} = 0;")
        w(d + 1, "#pragma unroll")
        call = (f"{fn}({c0} + {j}, {r0} + {i}, ({i} + {ry_lo}) * {pitch_w} + {j} + {rx_lo}, "
                f"{j});")
        w(d + 1, f"for (int {j} = 0; {j} < {rx}; ++{j}) " +
              (f"if ({lim_x}) {call}" if lim_x else call))
        for s in m.stores:
            at = f"({r0} + {i}) * {s.pitch} + {c0}"
            full = (1 << rx) - 1
            w(d + 1, f"if ({mask} == {full}u && reinterpret_cast<size_t>({s.buffer}) % "
                     f"{VECTOR_BYTES} == 0 && {s.pitch} % {rx} == 0) {{")
            comps = ", ".join(f"{vals[s.buffer]}[{e}]" for e in range(rx))
            svec = _VECTORS[s.ctype][0]
            w(d + 2, f"*reinterpret_cast<{svec}*>(&{s.buffer}[{at}]) = {svec}{{{comps}}};")
            w(d + 1, "} else {")
            w(d + 2, f"for (int {j} = 0; {j} < {rx}; ++{j}) "
                     f"if (({mask} >> {j}) & 1u) {s.buffer}[{at} + {j}] = {vals[s.buffer]}[{j}];")
            w(d + 1, "}")
        w(d, "}")

    if inner is None:
        w(4, f"auto {near} = {lambda_head}")
        w.lines += stencil_regs._reindent(windowed, base + unit * 5, first_indent)  # noqa: SLF001
        w(4, "};")
        rows_loop(near, 4)
    else:
        for h in regs:
            w(4, f"const {h.ctype} {h.name}[{h.count}] = {{" +
                 ", ".join(f"{h.buffer}[{h.low + e}]" for e in range(h.count)) + "};")
        interior = stencil_regs._statements_text(p, stmts, inner)  # noqa: SLF001
        w(4, f"auto {near} = {lambda_head}")
        w.lines += stencil_regs._reindent(interior, base + unit * 5, first_indent)  # noqa: SLF001
        w(4, "};")
        rows_loop(near, 4)
    w(3, "} else {")
    w(4, f"for (int {i} = 0; {i} < {ry}; ++{i})")
    w(5, f"for (int {j} = 0; {j} < {rx}; ++{j})")
    lims = " && ".join(c for c in (lim_y, lim_x) if c)
    w(6, (f"if ({lims}) " if lims else "") + f"{orig}({c0} + {j}, {r0} + {i});")
    w(3, "}")
    w(2, "}")
    w(1, "}")
    source = w.source()
    grid_y = ctx.launch.grid[1] if len(ctx.launch.grid) > 1 else "1"
    launch = dataclasses.replace(
        ctx.launch, grid=(f"ceil_div({ctx.launch.grid[0]}, {rx})",
                          grid_y if ry == 1 else f"ceil_div({grid_y}, {ry})"))
    halo = ", ".join(f"{x.buffer}[{x.dy[0]:+d}..{x.dy[1]:+d}][{x.dx[0]:+d}..{x.dx[1]:+d}]"
                     for x in m.windows)
    stored = (f"; {', '.join(s.buffer for s in m.stores)} stored with one {vec} store per row "
              f"where the row's {rx} outputs are written and the store is 16-byte aligned, "
              f"else per output") if m.stores else ""
    explanation = (f"{rx} x {ry} outputs per thread from a register window: the {rows_w} rows "
                   f"the outputs need ({halo}), each one {vec} load of the {rx} centre elements "
                   f"plus the halo as scalar loads, every neighbour read served from "
                   f"registers (L1 already serves the neighbours on sm_80/sm_90; this cuts load "
                   f"instructions, bounds tests and threads per output){stored}; the original "
                   f"statements, boundary branches and summation order are kept per output, so "
                   f"results are bit for bit the original's; the window is used where it lies "
                   f"inside the buffer and its rows are 16-byte aligned (tested at run time), "
                   f"the original statements elsewhere; the threads step over the original's "
                   f"{block[0]}x{block[1]}-thread blocks, so the kernel is also correct under "
                   f"the user's launch; grid {', '.join(launch.grid)}")
    return PassResult(source=source, launch=launch,
                      tags=("stencil2d-regs", f"vec{rx}", f"ry={ry}"),
                      explanation=explanation)
