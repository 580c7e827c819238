"""Pass ``stencil_regs``: a 1D stencil computes several consecutive outputs per thread from a
register window loaded with one vector read plus the halo.

On recent GPUs (sm_80, sm_90) a naive 1D stencil's neighbour reads already hit in L1, so a
shared-memory tile (``stencil_tile``) saves little; what costs is one thread, seven load
instructions and one bounds test per output. Here thread ``c`` computes the ``W`` outputs
``i0 = W * c .. i0 + W - 1`` (``W`` = 16 bytes of elements: 4 floats, 2 doubles): it loads
``in[i0 .. i0 + W - 1]`` with one ``float4`` (``double2``, ``int4``) read and the ``R``
elements on each side with scalar reads into a register array, and every neighbour read of
the ``W`` outputs is served from it (V. Volkov, "Better Performance at Lower Occupancy",
GTC 2010: several outputs per thread, more independent work in registers; CUDA C++ Best
Practices Guide, "Coalesced Access to Global Memory"; the vector types of the Programming
Guide, "Built-in Vector Types").

Recognized: what ``stencil_tile`` recognizes (its module doc: the index ``int i =
blockIdx.x * blockDim.x + threadIdx.x;`` first, an input read only as ``in[i + OFFSET]``,
offsets constant or affine in constant-bound loop variables), and also: the statements after
the index use no thread builtin (``threadIdx``, ``blockIdx``, ``blockDim``, ``gridDim``), each
windowed buffer holds a type with a CUDA vector type of 16 bytes (``float``, ``double``,
``int``, ``unsigned int``), the halo is at most ``MAX_RADIUS``, the spec's block is a number
and its grid can be written in C over the scalar parameters (``coarsen_reduce.spec_to_c``).

The rewrite keeps every statement after the index as written, as the body of a lambda of
the index (``auto one = [&](int i) { ... };``, so a ``return`` ends that output, as it ended
the original's thread), and calls it for ``i0 .. i0 + W - 1``:

- where the window ``in[i0 - R .. i0 + W - 1 + R]`` lies inside the buffer (its length from
  the spec) and ``in`` is 16-byte aligned (tested at run time: the pointer may be an offset
  into an allocation), through a copy whose reads ``in[IDX]`` become ``win[IDX - i0 + R]``
  (loops over the offsets get ``#pragma unroll`` so the window stays in registers);
- elsewhere (the buffer's ends, a misaligned pointer) through the original statements.

On the window's path the outputs are stored together: where every pointer parameter the
statements write is only written, as ``out[INDEX] = EXPR`` with ``INDEX`` the thread's index
itself, and holds ``float``, ``double``, ``int`` or ``unsigned int``, each such store becomes
``out_el(out_at, out_k, out_m, slot) = EXPR``: the element ``out_at[out_k]`` (the buffer at
the index on the other path, a register array of the chunk's ``W`` results on the window's)
with output ``slot``'s bit set in the mask ``out_m``. After the ``W`` outputs, when every bit
is set (each output took a branch that stores it) and ``out`` is aligned to the vector
(tested at run time), the results leave in one 16-byte vector store (``float4``, ``int4``,
``uint4``, ``double2``; ``W * sizeof`` past 16 bytes: several), else the stored ones one by
one. Each output then holds the value the original's thread left in it last; outputs the
original does not store stay untouched. A written buffer that is also read or updated keeps
every store where the original makes it.

Each output gets the same values in the same order with the same weights (the original's own
expressions), so the results are bit for bit the original's, boundary branches included. Reads
of an index clamped with ``min``/``max`` keep reading memory. The threads step over the
original's ``grid * block`` indices by the grid's size, so the rewrite is correct under any
launch: under the new one (``ceil_div(GRID, W)`` blocks of the user's block) and under the
user's own, where the extra threads do nothing (a drop-in, ``cudalens.dropin``). No
parameters.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from cudalens.kernel_model.edits import Edit, apply_edits, line_indent
from cudalens.kernel_model.loops import for_header
from cudalens.kernel_model.syntax import named_children, unparen, walk
from cudalens.optimizer import structural
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.passes import stencil_tile
from cudalens.optimizer.passes.coarsen_reduce import spec_to_c
from cudalens.optimizer.pointer_uses import pointer_uses
from cudalens.optimizer.reasons import Reason
from cudalens.spec import expr as spec_expr

name = "stencil_regs"

VECTOR_BYTES = 16
MAX_RADIUS = 8
_VECTORS = {"float": ("float4", 4), "double": ("double2", 2), "int": ("int4", 4),
            "unsigned int": ("uint4", 4), "unsigned": ("uint4", 4)}
_COMPONENTS = "xyzw"
# element type -> (bytes, {elements: vector type}) for the stores of the outputs
_STORES = {"float": (4, {1: "float", 2: "float2", 4: "float4"}),
           "double": (8, {1: "double", 2: "double2"}),
           "int": (4, {1: "int", 2: "int2", 4: "int4"}),
           "unsigned int": (4, {1: "unsigned int", 2: "uint2", 4: "uint4"}),
           "unsigned": (4, {1: "unsigned int", 2: "uint2", 4: "uint4"})}


@dataclasses.dataclass(frozen=True)
class _Store:
    """An output buffer whose ``width`` results of a chunk are stored as vectors: ``pieces``
    vectors of type ``vec``, ``per`` elements each, ``align`` bytes each (``per * size``);
    ``writes``: its ``buffer[index]`` nodes, each the left side of a plain ``=``."""

    buffer: str
    ctype: str
    vec: str
    per: int
    pieces: int
    align: int
    writes: tuple


def _vector_stores(ctx: PassContext, m, stmts, width: int) -> tuple[_Store, ...]:
    """The output buffers the fast path stores as vectors (``_Store``): every pointer
    parameter the statements write, when each is only written (never read or updated), as ``BUF[INDEX] = EXPR`` with
    ``INDEX`` the thread's index itself, and holds a type of ``_STORES``; else ``()`` (every
    write then stays a scalar store where the original makes it, as before)."""
    p = m.parsed
    tiled = {t.buffer for t in m.tiled}
    out = []
    for q in ctx.kernel.parameters:
        if not q.is_pointer or q.name in tiled:
            continue
        uses = [u for s in stmts for u in pointer_uses(s, p, {q.name})]
        if all(u.kind == "read" for u in uses):
            continue  # not written (a table such as filter taps, read as written)
        for u in uses:
            parent = u.access.parent if u.access is not None else None
            if u.kind != "write" or u.form != "subscript" or u.index is None or \
                    parent is None or parent.type != "assignment_expression" or \
                    parent.child_by_field_name("left") != u.access or \
                    unparen(u.index).type != "identifier" or \
                    p.text_of(unparen(u.index)) != m.index:
                return ()
        ctype = " ".join(q.type.split())
        if ctype not in _STORES:
            return ()
        size, vecs = _STORES[ctype]
        per = min(width, VECTOR_BYTES // size)
        if per not in vecs or width % per:
            return ()
        out.append(_Store(q.name, ctype, vecs[per], per, width // per, per * size,
                          tuple(u.access for u in uses)))
    return tuple(out)


def _plan(ctx: PassContext):
    reason, m = stencil_tile._plan(ctx)  # noqa: SLF001 -- the same recognizer
    if reason is not None:
        return reason, None, 0, None
    p = m.parsed
    stmts = named_children(m.index_decl.parent)
    for stmt in stmts[1:]:
        for n in walk(stmt):
            if n.type == "identifier" and p.text_of(n) in structural.BUILTINS:
                return Reason(f"the statements after the index use {p.text_of(n)} (line "
                              f"{p.line_of(n)}): each thread now computes several outputs",
                              p.line_of(n)), None, 0, None
    widths = set()
    for t in m.tiled:
        ctype = " ".join(t.ctype.split())
        if ctype not in _VECTORS:
            return (f"{t.buffer} holds {t.ctype}; the window is loaded with float4, double2, "
                    f"int4 or uint4"), None, 0, None
        widths.add(_VECTORS[ctype][1])
        if t.radius > MAX_RADIUS:
            return (f"the reads of {t.buffer} reach {t.radius} elements from {m.index}; the "
                    f"register window holds halos of at most {MAX_RADIUS}"), None, 0, None
    if all(r in t.checked for t in m.tiled for r in t.reads):
        return (f"every read of {', '.join(t.buffer for t in m.tiled)} is at an index clamped "
                f"with min/max: a register window would serve none of them"), None, 0, None
    if len(widths) != 1:
        return "the windowed buffers hold elements of different sizes", None, 0, None
    block = stencil_tile._user_block(ctx)  # noqa: SLF001
    if block is None:
        return f"the spec's block ({ctx.launch.block[0]}) is not a number", None, 0, None
    grid = spec_to_c(ctx.launch.grid[0], ctx, block)
    if grid is None:
        return (f"the spec's grid ({ctx.launch.grid[0]}) cannot be written over the kernel's "
                f"scalar parameters: the threads could not step over the original's indices"
                ), None, 0, None
    return None, m, widths.pop(), grid


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel is a 1D stencil whose outputs the pass can compute several per
    thread from a register window, else the reason."""
    return _plan(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """No parameters: the width is the element type's 16-byte vector."""
    return ({},)


def _statements_text(p, stmts, edits: list[Edit]) -> str:
    """The source of ``stmts`` (first to last, comments between kept) with ``edits`` (byte
    offsets of the whole file) applied."""
    start, end = stmts[0].start_byte, stmts[-1].end_byte
    local = [Edit(e.start - start, e.end - start, e.text) for e in edits
             if start <= e.start and e.end <= end]
    return apply_edits(p.data[start:end], local)


def _reindent(text: str, indent: str, first_indent: str) -> list[str]:
    """``text`` (its first line starting at ``first_indent``'s column) re-indented to
    ``indent``."""
    lines = text.split("\n")
    out = [indent + lines[0].strip()]
    for line in lines[1:]:
        if line.startswith(first_indent):
            out.append(indent + line[len(first_indent):].rstrip())
        else:
            out.append(indent + line.strip() if line.strip() else "")
    return out


def _offset_text(p, idx, index: str) -> str:
    """`` + OFFSET`` for a read ``in[IDX]`` with ``IDX - index`` = ``OFFSET``: ``''`` for
    ``in[i]``, `` + r`` for ``in[i + r]``, `` - 1`` for ``in[i - 1]``, else `` + (IDX -
    i)``."""
    node = unparen(idx)
    if node.type == "identifier" and p.text_of(node) == index:
        return ""
    if node.type == "binary_expression" and \
            node.child_by_field_name("operator").type in ("+", "-"):
        left = unparen(node.child_by_field_name("left"))
        right = node.child_by_field_name("right")
        if left.type == "identifier" and p.text_of(left) == index:
            op = node.child_by_field_name("operator").type
            simple = unparen(right).type in ("identifier", "number_literal")
            text = p.text_of(right) if simple else f"({p.text_of(right)})"
            return f" {op} {text}"
    return f" + ({p.text_of(node)} - {index})"


def _int_enough(ctx: PassContext, block: int) -> bool:
    """Whether ``int`` holds every index the chunk loop forms at the spec's sizes: the
    original's threads ``grid * block`` and a grid's stride beyond them."""
    from cudalens.optimizer.index_width import INT32_MAX, spec_sizes
    from cudalens.spec.expr import Dim3

    sizes = spec_sizes(ctx)
    if sizes is None:
        return False
    try:
        g = spec_expr.evaluate(ctx.launch.grid[0], {**sizes, "block": Dim3(block, 1, 1)})
    except spec_expr.ExprError:
        return False
    return isinstance(g, int) and 2 * g * block + 2 * MAX_RADIUS < INT32_MAX


def apply(ctx: PassContext) -> PassResult:
    """The register-window stencil (module doc).

    Raises:
        PassNotApplicable: the precondition fails (the message says why).
    """
    reason, m, width, grid = _plan(ctx)
    if reason is not None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    p = m.parsed
    body = m.index_decl.parent
    stmts = named_children(body)[1:]
    w = structural.Layout(ctx)
    block = stencil_tile._user_block(ctx)  # noqa: SLF001
    itype = m.index_type
    ctype = "int" if _int_enough(ctx, block) else "long long"
    chunk, total, i0, j, one = (w.fresh("c"), w.fresh("total"), w.fresh("i0"), w.fresh("j"),
                                w.fresh("one"))
    wins = {t.buffer: w.fresh(f"{t.buffer}_win") for t in m.tiled}
    vecs = {t.buffer: w.fresh(f"{t.buffer}_v") for t in m.tiled}
    srcs = {t.buffer: w.fresh(f"{t.buffer}_at") for t in m.tiled}
    starts = {t.buffer: w.fresh(f"{t.buffer}_k") for t in m.tiled}
    stores = _vector_stores(ctx, m, stmts, width)
    results = {st.buffer: w.fresh(f"{st.buffer}_r") for st in stores}
    masks = {st.buffer: w.fresh(f"{st.buffer}_m") for st in stores}
    dsts = {st.buffer: w.fresh(f"{st.buffer}_at") for st in stores}
    dks = {st.buffer: w.fresh(f"{st.buffer}_k") for st in stores}
    els = {st.buffer: w.fresh(f"{st.buffer}_el") for st in stores}
    slot = w.fresh("slot") if stores else None
    # one copy of the statements: each windowed read IN[IDX] from SRC[AT + (IDX - i)], SRC
    # the register window (AT the output's slot in it) or the buffer itself (AT = i); the
    # offset IDX - i stays a constant even where a branch pins i (if (i == 0) ...)
    edits: list[Edit] = []
    for t in m.tiled:
        for read, idx in zip(t.reads, t.index_nodes):
            if read in t.checked:  # a clamped index is read from memory as the original's
                continue
            edits.append(Edit(read.start_byte, read.end_byte,
                              f"{srcs[t.buffer]}[{starts[t.buffer]}"
                              f"{_offset_text(p, idx, m.index)}]"))
    # each stored element BUF[i] to EL(DST, K, M, SLOT): DST[K] (the buffer at i, or the
    # chunk's result slot), marking the output's slot SLOT as written in the mask M
    for st in stores:
        for node in st.writes:
            b = st.buffer
            edits.append(Edit(node.start_byte, node.end_byte,
                              f"{els[b]}({dsts[b]}, {dks[b]}, {masks[b]}, {slot})"))
    for n in (n for s in stmts for n in walk(s)):
        if n.type != "for_statement" or for_header(n, p) is None:
            continue
        prev = n.prev_sibling
        if not (prev is not None and prev.type.startswith("preproc") and
                "unroll" in p.text_of(prev)):
            edits.append(Edit(n.start_byte, n.start_byte,
                              "#pragma unroll\n" + line_indent(p.data, n.start_byte)))
    first_indent = line_indent(p.data, stmts[0].start_byte)
    text = _statements_text(p, stmts, edits)
    vec_name = _VECTORS[" ".join(m.tiled[0].ctype.split())][0]
    args = ", ".join([f"const {t.ctype}* {srcs[t.buffer]}, {itype} {starts[t.buffer]}"
                      for t in m.tiled] +
                     [f"{st.ctype}* {dsts[st.buffer]}, {itype} {dks[st.buffer]}, "
                      f"unsigned& {masks[st.buffer]}" for st in stores] +
                     ([f"int {slot}"] if stores else []))
    w(1, f"// {width} outputs per thread: one {vec_name} load and the halo in registers serve "
         f"the neighbour reads")
    w(1, f"const {ctype} {total} = ({grid}) * {block};  // the original's threads")
    for st in stores:
        at, k, mk, s = w.fresh("at"), w.fresh("k"), w.fresh("m"), w.fresh("s")
        w(1, f"auto {els[st.buffer]} = []({st.ctype}* {at}, {itype} {k}, unsigned& {mk}, "
             f"int {s}) -> {st.ctype}& {{ {mk} |= 1u << {s}; return {at}[{k}]; }};  "
             f"// the element, marked stored")
    w(1, f"auto {one} = [&]({itype} {m.index}, {args}) {{")
    w.lines += _reindent(text, w.base + w.unit * 2, first_indent)
    w(1, "};")
    w(1, f"for ({ctype} {chunk} = blockIdx.x * blockDim.x + threadIdx.x; {chunk} * {width} < "
         f"{total}; {chunk} += gridDim.x * blockDim.x) {{")
    w(2, f"const {itype} {i0} = {chunk} * {width};")
    inside = " && ".join(
        f"reinterpret_cast<size_t>({t.buffer}) % {VECTOR_BYTES} == 0 && "
        + (f"{i0} >= {max(-t.offsets[0], 0)} && " if t.offsets[0] < 0 else "")
        + f"{i0} + {width - 1 + max(t.offsets[1], 0)} < {t.length}" for t in m.tiled)
    w(2, f"if ({inside}) {{")
    calls, plain = [], []
    for t in m.tiled:
        below, above = max(-t.offsets[0], 0), max(t.offsets[1], 0)
        w(3, f"const {vec_name} {vecs[t.buffer]} = *reinterpret_cast<const {vec_name}*>("
             f"&{t.buffer}[{i0}]);")
        parts = [f"{vecs[t.buffer]}.{_COMPONENTS[k]}" if 0 <= k < width else
                 f"{t.buffer}[{i0} {'-' if k < 0 else '+'} {abs(k)}]"
                 for k in range(-below, width + above)]
        w(3, f"const {t.ctype} {wins[t.buffer]}[{width + below + above}] = "
             f"{{{', '.join(parts)}}};")
        calls.append(f"{wins[t.buffer]}, {j} + {below}" if below else f"{wins[t.buffer]}, {j}")
        plain.append(f"{t.buffer}, {i0} + {j}")
    for st in stores:
        b = st.buffer
        w(3, f"{st.ctype} {results[b]}[{width}];")
        w(3, f"unsigned {masks[b]} = 0u;")
        calls.append(f"{results[b]}, {j}, {masks[b]}")
        plain.append(f"{b}, {i0} + {j}, {masks[b]}")
    if stores:
        calls.append(j)
        plain.append(j)
    w(3, "#pragma unroll")
    w(3, f"for (int {j} = 0; {j} < {width}; ++{j}) {one}({i0} + {j}, {', '.join(calls)});")
    full = f"{(1 << width) - 1:#x}u"
    for st in stores:
        b, r = st.buffer, results[st.buffer]
        # every output of the chunk stored (each took a branch that stores it) and the
        # buffer aligned: one vector store per 16 bytes; else the stored ones, one by one
        w(3, f"if ({masks[b]} == {full} && reinterpret_cast<size_t>({b}) % {st.align} == 0) {{")
        for k in range(st.pieces):
            at = f"{i0} + {k * st.per}" if k else i0
            elems = ", ".join(f"{r}[{k * st.per + e}]" for e in range(st.per))
            w(4, f"*reinterpret_cast<{st.vec}*>(&{b}[{at}]) = {st.vec}{{{elems}}};")
        w(3, "} else {")
        w(4, "#pragma unroll")
        w(4, f"for (int {j} = 0; {j} < {width}; ++{j}) if ({masks[b]} >> {j} & 1u) "
             f"{b}[{i0} + {j}] = {r}[{j}];")
        w(3, "}")
    w(2, "} else {")
    for st in stores:
        w(3, f"unsigned {masks[st.buffer]} = 0u;  // unused: the outputs are stored in place")
    w(3, f"for (int {j} = 0; {j} < {width}; ++{j}) {one}({i0} + {j}, {', '.join(plain)});")
    w(2, "}")
    w(1, "}")
    source = w.source()
    grid_spec = ctx.launch.grid[0]
    launch = dataclasses.replace(ctx.launch, grid=(f"ceil_div({grid_spec}, {width})",) +
                                 tuple(ctx.launch.grid[1:]))
    halo = ", ".join(f"{t.buffer}[{t.offsets[0]:+d}..{t.offsets[1]:+d}]" for t in m.tiled)
    explanation = (f"{width} consecutive outputs per thread from a register window: one "
                   f"{vec_name} load of the {width} centre elements plus the halo ({halo}) as "
                   f"scalar loads, every neighbour read of the {width} outputs served from "
                   f"registers (on sm_80/sm_90 L1 already serves the neighbours, so a shared "
                   f"tile saves little; this cuts load instructions and threads per output); "
                   f"the original statements, boundary branches and summation order are kept "
                   f"per output, so results are bit for bit the original's; the window is used "
                   f"where it lies inside the buffer and the pointer is 16-byte aligned "
                   f"(tested at run time), the original reads elsewhere; the threads step "
                   f"over the original's {block}-thread grid, so the kernel is also correct "
                   f"under the user's launch; grid ceil_div({grid_spec}, {width})")
    for st in stores:
        vecs = f"one {st.vec}" if st.pieces == 1 else f"{st.pieces} {st.vec}"
        explanation += (f"; on the window's path the {width} results of {st.buffer} leave in "
                        f"{vecs} store{'s' if st.pieces > 1 else ''} when all {width} outputs "
                        f"are stored and {st.buffer} is aligned (tested at run time), else "
                        f"one by one")
    return PassResult(source=source, launch=launch, tags=("stencil-regs", f"vec{width}"),
                      explanation=explanation)
