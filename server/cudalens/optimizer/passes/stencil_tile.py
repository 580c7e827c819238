"""Pass ``stencil_tile``: a 1D stencil or convolution reads its block's inputs, with the halo,
into shared memory once.

In a naive stencil each thread reads ``2R + 1`` neighbours from global memory, so every
input element is requested ``2R + 1`` times by neighbouring threads (once per output that
uses it). Loading the block's ``B`` elements plus ``R`` on each side into a shared tile
first, with consecutive threads on consecutive elements, turns those into one coalesced
global read per element and ``2R + 1`` shared-memory reads (CUDA C++ Programming Guide,
"Shared Memory"; the tiled 1D stencil of NVIDIA's "CUDA C/C++ Basics", 2010).

Recognized::

    int i = blockIdx.x * blockDim.x + threadIdx.x;      // first statement, any integer type
    ...any statements (guards, clamps, early returns, loops)...

where a pointer parameter ``in`` that the kernel only reads is read only as ``in[IDX]``
(or ``__ldg(&in[IDX])``) with ``IDX`` = ``i + OFFSET``, ``OFFSET`` a constant or affine in
the variables of ``for`` loops with constant bounds (``for (int r = -RADIUS; r <= RADIUS;
++r)``), through locals and macros (``int j = i + r;``). The halo radius ``R`` is the
largest ``|OFFSET|``; at least two different offsets must occur (one is a plain copy). No
pointer parameter may be read at an index computed from memory (``x[col_idx[j]]``, or
``vals[j]`` with ``j`` running from ``row_ptr[row]``, as a CSR SpMV does): such a gather
reaches elements no tile of the block's neighbourhood holds, so the kernel is not a stencil
even where one of its buffers (``row_ptr[row]``, ``row_ptr[row + 1]``) looks like one.

The rewrite inserts, after the index::

    if (blockDim.x > B) return;   // another launch's larger block: nothing out of the tile
    __shared__ T tile[B + 2 * R];
    const int base = (int)(blockIdx.x * blockDim.x) - R;   // global index of tile[0]
    for (int t = threadIdx.x; t < B + 2 * R; t += blockDim.x)
        if (base + t >= 0 && base + t < LEN) tile[t] = in[base + t];
    __syncthreads();

and replaces each read ``in[IDX]`` by ``tile[IDX - base]``. Every statement of the original
stays as written, so the guards, clamps and boundary cases are the original's; a read the
original makes of an element inside ``in`` (``0 <= IDX < LEN``, the buffer's length from the
spec) gets the same value, since the tile holds every in-bounds element within ``R`` of the
block. Every thread reaches the barrier: it comes before anything the original does (the
block-size test before it is the same for every thread of a block).

Parameters: ``block`` ``B`` (the user's block first where it is a number, then 256, 128,
512 when the spec's grid is written with ``block.x``): the launch's block becomes ``B``;
the tile has room for a block of at most ``B`` threads.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.optimizer import structural
from cudalens.optimizer.affine import (Scope, is_global_index, poly_of, split_linear,
                                       strip_casts)
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.index2d import NoMatch
from cudalens.optimizer.macros import file_macros
from cudalens.optimizer.pointer_uses import READ_ONLY_LOADS, pointer_uses
from cudalens.kernel_model.accesses import accesses
from cudalens.kernel_model.file_facts import file_identifiers
from cudalens.kernel_model.edits import Edit, apply_edits, fresh_name, line_indent
from cudalens.kernel_model.loops import for_header
from cudalens.kernel_model.model import readable_body_or
from cudalens.kernel_model.syntax import (Parsed, identifiers, named_children, unparen, walk,
                                          written_target)
from cudalens.kernel_model.syntax import short_text as _short
from cudalens.spec import expr as spec_expr
from cudalens.spec.model import BufferDecl, ScalarDecl
from cudalens.spec.poly import Poly

name = "stencil_tile"

BLOCKS = (256, 128, 512)
MAX_RADIUS = 64
_WIDE = ("size_t", "long", "long long", "unsigned long", "unsigned long long", "int64_t",
         "uint64_t", "ptrdiff_t")


@dataclass(frozen=True)
class _Tiled:
    buffer: str
    ctype: str  # element type
    radius: int
    offsets: tuple[int, int]  # smallest and largest offset
    reads: tuple[tree_sitter.Node, ...]  # the nodes replaced (subscript or __ldg call)
    index_nodes: tuple[tree_sitter.Node, ...]
    length: str  # the buffer's length as a C expression of the kernel's scalars
    checked: tuple[tree_sitter.Node, ...] = ()  # clamped reads: tile when inside it, else global


@dataclass(frozen=True)
class _Match:
    parsed: Parsed
    index: str
    index_type: str
    index_decl: tree_sitter.Node
    tiled: tuple[_Tiled, ...]


def _fail(msg: str, line: Optional[int] = None) -> NoMatch:
    return NoMatch(msg, line)


def _assigned(body: tree_sitter.Node, parsed: Parsed) -> set[str]:
    """Names assigned or incremented anywhere under ``body`` (declarations excluded)."""
    out = set()
    for n in walk(body):
        t = written_target(n)
        if t is not None and t.type == "identifier":
            out.add(parsed.text_of(t))
    return out


def _const(node: tree_sitter.Node, parsed: Parsed, scope: Scope) -> Optional[int]:
    p = poly_of(node, parsed, scope)
    return p.constant if p is not None and p.is_const() else None


def _loop_ranges(body: tree_sitter.Node, parsed: Parsed, scope: Scope,
                 assigned: set[str]) -> dict[str, tuple[int, int]]:
    """{var: (lowest, highest)} of every ``for`` loop with constant bounds stepping by one
    whose variable its body does not change (``for (int r = -R; r <= R; ++r)``)."""
    out: dict[str, tuple[int, int]] = {}
    counts: dict[str, int] = {}
    for loop in walk(body):
        if loop.type != "for_statement":
            continue
        head = for_header(loop, parsed)
        if head is None:
            continue
        counts[head.var] = counts.get(head.var, 0) + 1
        upd = parsed.text_of(unparen(head.update)).replace(" ", "")
        if upd not in (f"++{head.var}", f"{head.var}++", f"{head.var}+=1"):
            continue
        if head.body is not None and head.var in _assigned(head.body, parsed):
            continue
        cond = head.cond
        if cond.type != "binary_expression" or \
                parsed.text_of(unparen(cond.child_by_field_name("left"))) != head.var:
            continue
        op = cond.child_by_field_name("operator").type
        lo = _const(head.start, parsed, scope)
        hi = _const(cond.child_by_field_name("right"), parsed, scope)
        if lo is None or hi is None or op not in ("<", "<="):
            continue
        hi = hi - 1 if op == "<" else hi
        if hi >= lo:
            out[head.var] = (lo, hi)
    return {v: r for v, r in out.items() if counts.get(v) == 1}  # one loop per name


def _locals(body: tree_sitter.Node, parsed: Parsed, index: str,
            assigned: set[str]) -> dict[str, tuple[Parsed, tree_sitter.Node]]:
    """Integer locals declared once with an initializer and never changed (``int j = i +
    r;``), for folding into indices; the index itself stays a symbol."""
    seen: dict[str, int] = {}
    found: dict[str, tuple[Parsed, tree_sitter.Node]] = {}
    for n in walk(body):
        if n.type != "init_declarator":
            continue
        d = n.child_by_field_name("declarator")
        if d is None or d.type != "identifier":
            continue
        word = parsed.text_of(d)
        seen[word] = seen.get(word, 0) + 1
        found[word] = (parsed, n.child_by_field_name("value"))
    return {k: v for k, v in found.items()
            if seen[k] == 1 and k not in assigned and k != index}


def _offset_range(rest: Poly, ranges: dict[str, tuple[int, int]]) -> Optional[tuple[int, int]]:
    """The smallest and largest value of ``rest``, linear in loop variables of known range;
    None when it uses anything else."""
    lo = hi = 0
    for mono, coef in rest.terms:
        if not mono:
            lo, hi = lo + coef, hi + coef
            continue
        if len(mono) != 1 or mono[0] not in ranges:
            return None
        a, b = ranges[mono[0]]
        lo, hi = lo + min(coef * a, coef * b), hi + max(coef * a, coef * b)
    return lo, hi


def _length_in_kernel(ctx: PassContext, buffer: str) -> str:
    """The spec's length of ``buffer`` written with the kernel's scalar parameters (each size
    replaced by a scalar whose value is exactly that size).

    Raises:
        NoMatch: a size of the length has no such scalar.
    """
    decl = ctx.spec.param(buffer)
    length = decl.length
    by_size = {}
    for p in ctx.spec.params:
        if isinstance(p, ScalarDecl) and re.fullmatch(r"\s*\w+\s*", p.expr):
            by_size.setdefault(p.expr.strip(), p.name)
    try:
        names = spec_expr.names_in(length)
    except spec_expr.ExprError as exc:
        raise _fail(f"cannot read the length of {buffer} ({length}): {exc}") from None
    missing = sorted(n for n in names if n not in by_size)
    if missing:
        raise _fail(f"the length of {buffer} ({length}) uses {', '.join(missing)}, which no "
                    f"scalar parameter passes: the tile loads cannot be bounded in the kernel")
    return re.sub(r"\b\w+\b", lambda m: by_size.get(m.group(0), m.group(0)), length).strip()


def _read_node(access: tree_sitter.Node, parsed: Parsed) -> tree_sitter.Node:
    """The node a tile read replaces: ``in[IDX]``, or the whole ``__ldg(&in[IDX])``."""
    cur = access
    while cur.parent is not None and cur.parent.type == "parenthesized_expression":
        cur = cur.parent
    amp = cur.parent
    if amp is not None and amp.type == "pointer_expression":
        cur = amp
        while cur.parent is not None and cur.parent.type == "parenthesized_expression":
            cur = cur.parent
        args = cur.parent
        if args is not None and args.type == "argument_list" and args.parent is not None:
            fn = args.parent.child_by_field_name("function")
            if fn is not None and parsed.text_of(fn) in READ_ONLY_LOADS:
                return args.parent
    return access


_CLAMPS = ("min", "max", "std::min", "std::max", "umin", "umax")


def _unclamped(node: tree_sitter.Node, parsed: Parsed,
               index: str) -> tuple[tree_sitter.Node, bool]:
    """(A, True) for an index clamped with ``min``/``max`` (``min(max(A, 0), n - 1)``, any
    nesting) where the other arguments do not use ``index``; else (node, False)."""
    cur, clamped = strip_casts(node, parsed), False
    while cur.type == "call_expression":
        fn = cur.child_by_field_name("function")
        args = named_children(cur.child_by_field_name("arguments"))
        if fn is None or parsed.text_of(fn).replace(" ", "") not in _CLAMPS or len(args) != 2:
            break
        uses = [a for a in args if index in identifiers(a, parsed)]
        if len(uses) != 1:
            break
        cur, clamped = strip_casts(uses[0], parsed), True
    return cur, clamped


def _row_pointers(ctx: PassContext, buffer: str, uses, index: str) -> None:
    """Refuses CSR row pointers (the spec's ``csr(...)`` fill, or reads that start or bound a
    ``for`` loop): ``rp[row]`` and ``rp[row + 1]`` delimit a row's entries, they are not a
    neighbourhood whose staging saves reads."""
    try:
        decl = ctx.spec.param(buffer)
    except KeyError:
        decl = None
    if isinstance(decl, BufferDecl) and decl.fill == "csr" and uses:
        raise _fail(f"{buffer} holds CSR row pointers ('{decl.fill}({', '.join(decl.fill_args)})' "
                    f"in the spec): its reads ('{uses[0].text}', line {uses[0].line}) delimit a "
                    f"row's entries, not a neighbourhood of {index} to stage in shared memory",
                    line=uses[0].line)
    for u in uses:
        cur = u.access
        while cur is not None and cur.type != "for_statement":
            header = cur.parent
            if header is not None and header.type == "for_statement" and cur in (
                    header.child_by_field_name("initializer"),
                    header.child_by_field_name("condition")):
                raise _fail(f"'{u.text}' (line {u.line}) starts or bounds the loop at line "
                            f"{header.start_point[0] + 1}: {buffer} holds row pointers that "
                            f"delimit a row's entries, not a neighbourhood of {index} to stage "
                            f"in shared memory", line=u.line)
            cur = header


def _buffer(ctx: PassContext, parsed: Parsed, body: tree_sitter.Node, buffer: str,
            index: str, scope: Scope, ranges: dict) -> _Tiled:
    uses = pointer_uses(body, parsed, {buffer})
    _row_pointers(ctx, buffer, uses, index)
    offsets: list[tuple[int, int]] = []
    reads, idx_nodes, checked = [], [], []
    for u in uses:
        if u.kind != "read" or u.form != "subscript" or u.index is None:
            raise _fail(f"{buffer} is used as '{u.text}' (line {u.line}), not only read as "
                        f"{buffer}[{index} + offset]", line=u.line)
        node = strip_casts(u.index, parsed)
        if node.type == "identifier" and parsed.text_of(node) in scope.locals:
            node = scope.locals[parsed.text_of(node)][1]  # int j = min(max(i + d, 0), n - 1);
        inner, clamped = _unclamped(node, parsed, index)
        p = poly_of(inner, parsed, scope)
        try:
            coef, rest = split_linear(p, index) if p is not None else (None, None)
        except ValueError:
            coef = None
        got = _offset_range(rest, ranges) if coef == Poly.const(1) else None
        if got is None:
            raise _fail(f"the read '{u.text}' (line {u.line}) is not {buffer}[{index} + offset] "
                        f"with an offset of constants and constant-bound loop variables "
                        f"(or such an index clamped with min/max)", line=u.line)
        offsets.append(got)
        reads.append(_read_node(u.access, parsed))
        idx_nodes.append(u.index)
        if clamped:
            checked.append(reads[-1])
    lo = min(a for a, _ in offsets)
    hi = max(b for _, b in offsets)
    radius = max(-lo, hi, 0)
    if hi == lo:
        raise _fail(f"every read of {buffer} is at offset {lo} from {index}: no neighbours to "
                    f"share")
    if radius > MAX_RADIUS:
        raise _fail(f"the reads of {buffer} reach {radius} elements from {index}; the pass "
                    f"tiles halos of at most {MAX_RADIUS}")
    decl = ctx.spec.param(buffer)
    if not isinstance(decl, BufferDecl) or decl.role != "in":
        raise _fail(f"the spec does not call {buffer} an input")
    return _Tiled(buffer, ctx.kernel.parameter(buffer).type, radius, (lo, hi), tuple(reads),
                  tuple(idx_nodes), _length_in_kernel(ctx, buffer), tuple(checked))


def _gather(ctx: PassContext, index: str) -> Optional[NoMatch]:
    """The first read of a pointer parameter at an index computed from memory (``x[col[j]]``,
    ``vals[j]`` with ``j`` running between two loaded values): a data-dependent gather, whose
    elements no tile of the block's neighbourhood holds. None when there is none. The kernel
    model's accesses (``kernel_model.accesses``) say which reads those are, and why."""
    for a in accesses(ctx.model):
        if a.mode != "read" or a.kind != "data_dependent":
            continue
        return _fail(f"the read '{a.text}' (line {a.line}) is at an index computed from memory "
                     f"({a.reason}), not at a constant offset from {index}: a data-dependent "
                     f"gather, not a stencil; the pass tiles only reads at constant offsets "
                     f"around the thread's index", line=a.line)
    return None


def _match(ctx: PassContext) -> _Match:
    parsed, body = readable_body_or(ctx, _fail)
    stmts = named_children(body)
    scope0 = Scope(macros=file_macros(parsed))
    expected = "expected the body to start with 'int i = blockIdx.x * blockDim.x + threadIdx.x;'"
    if not stmts or stmts[0].type != "declaration":
        raise _fail(expected)
    decls = stmts[0].children_by_field_name("declarator")
    if len(decls) != 1 or decls[0].type != "init_declarator" or \
            decls[0].child_by_field_name("declarator").type != "identifier" or \
            not is_global_index(poly_of(decls[0].child_by_field_name("value"), parsed, scope0),
                                "x"):
        raise _fail(f"{expected}, found '{_short(parsed, stmts[0])}' at line "
                    f"{parsed.line_of(stmts[0])}", line=parsed.line_of(stmts[0]))
    index = parsed.text_of(decls[0].child_by_field_name("declarator"))
    type_node = stmts[0].child_by_field_name("type")
    index_type = " ".join(parsed.text_of(type_node).split()) if type_node is not None else "int"
    for stmt in stmts[1:]:
        tied = structural.thread_tied(stmt, parsed)
        if tied:
            raise _fail(f"the body uses {tied}; threads cooperate already")
        call = structural.impure_call(stmt, parsed, scope0.macros)
        if call:
            raise _fail(f"the body calls {call}, which the pass cannot follow")
    assigned = _assigned(body, parsed)
    if index in assigned:
        raise _fail(f"the body changes {index}; the pass needs one element per thread")
    gather = _gather(ctx, index)
    if gather is not None:
        raise gather
    scope = Scope(macros=scope0.macros, locals=_locals(body, parsed, index, assigned))
    ranges = _loop_ranges(body, parsed, scope0, assigned)
    tiled, reasons = [], []
    for q in ctx.kernel.parameters:
        if not q.is_pointer:
            continue
        uses = pointer_uses(body, parsed, {q.name})
        if not uses or any(u.kind != "read" for u in uses):
            continue
        try:
            tiled.append(_buffer(ctx, parsed, body, q.name, index, scope, ranges))
        except NoMatch as exc:
            reasons.append(exc)
    if not tiled:
        if reasons:
            raise reasons[0]
        raise _fail("no pointer parameter is only read: nothing to stage in shared memory")
    return _Match(parsed, index, index_type, stmts[0], tuple(tiled))


def _early(ctx: PassContext) -> Optional[str]:
    body = ctx.text[ctx.kernel.body_start_byte:ctx.kernel.body_end_byte]
    if re.search(r"\b(threadIdx|blockIdx|blockDim|gridDim)\s*\.\s*[yz]\b", body):
        return "the kernel indexes along y or z; the pass tiles 1D stencils"
    if any(b.strip() != "1" for b in ctx.launch.block[1:]):
        return f"the spec's block ({', '.join(ctx.launch.block)}) is not 1D"
    if ctx.spec.atomics:
        return "the spec marks the kernel as using atomics"
    return None


def _plan(ctx: PassContext) -> tuple[Optional[str], Optional[_Match]]:
    return structural.plan(ctx, _early(ctx), _match, NoMatch)


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel is a 1D stencil whose neighbour reads the pass can tile."""
    return _plan(ctx)[0]


def _user_block(ctx: PassContext) -> Optional[int]:
    text = ctx.launch.block[0].strip()
    return int(text) if text.isdigit() and 32 <= int(text) <= 1024 else None


def _grid_follows_block(ctx: PassContext) -> bool:
    try:
        return any(spec_expr.BLOCK in spec_expr.names_in(g) for g in ctx.launch.grid)
    except spec_expr.ExprError:
        return False


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """The user's block first (the rewrite is then a drop-in under the user's launch), then
    256, 128 and 512 threads when the spec's grid follows the block."""
    own = _user_block(ctx)
    sizes = [own] if own else []
    if _grid_follows_block(ctx):
        sizes += [b for b in BLOCKS if b not in sizes]
    return tuple({"block": b} for b in sizes) or ({"block": BLOCKS[0]},)


def apply(ctx: PassContext, block: int = 256) -> PassResult:
    """The tiled kernel for blocks of at most ``block`` threads.

    Raises:
        PassNotApplicable: the precondition fails, or ``block`` is not the user's block and
            the spec's grid does not follow ``block.x``.
        ValueError: ``block`` is not in 32..1024.
    """
    if not 32 <= block <= 1024:
        raise ValueError(f"block must be in 32..1024, found {block!r}")
    reason, m = _plan(ctx)
    if reason is not None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    if block != _user_block(ctx) and not _grid_follows_block(ctx):
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: the spec's grid "
                                f"({', '.join(ctx.launch.grid)}) does not follow block.x, so "
                                f"the block stays {ctx.launch.block[0]}")
    p = m.parsed
    taken = set(file_identifiers(p)) | {ctx.kernel.name}
    indent = line_indent(p.data, m.index_decl.start_byte)
    wide = m.index_type in _WIDE
    itype = "long long" if wide else "int"
    # the tiles hold `block` threads' elements: a larger block (another launch) does nothing
    lines = [f"if (blockDim.x > {block}) return;"]
    edits = []
    for t in m.tiled:
        tile, base, k = fresh_name(f"{t.buffer}_tile", taken), \
            fresh_name(f"{t.buffer}_base", taken), fresh_name("t", taken)
        below, above = max(-t.offsets[0], 0), max(t.offsets[1], 0)
        span = f"{block} + {below + above}"
        start = f"({itype})blockIdx.x * blockDim.x" if wide else \
            f"({itype})(blockIdx.x * blockDim.x)"
        lines += [f"__shared__ {t.ctype} {tile}[{span}];",
                  f"const {itype} {base} = {start}" + (f" - {below};" if below else ";"),
                  f"for (int {k} = threadIdx.x; {k} < {span}; {k} += blockDim.x)",
                  f"    if ({base} + {k} >= 0 && {base} + {k} < {t.length}) "
                  f"{tile}[{k}] = {t.buffer}[{base} + {k}];"]
        for read, idx in zip(t.reads, t.index_nodes):
            i = unparen(idx)
            simple = i.type in ("identifier", "number_literal", "subscript_expression",
                                "call_expression", "field_expression") or \
                (i.type == "binary_expression" and
                 i.child_by_field_name("operator").type in ("+", "-", "*", "/", "%"))
            text = p.text_of(i) if simple else f"({p.text_of(i)})"
            slot = f"{text} - {base}"
            if read in t.checked:  # a clamped index: in the tile unless the clamp moved it out
                slot = (f"(unsigned {itype})({slot}) < {span} ? {tile}[{slot}] : "
                        f"{p.text_of(read)}")
                slot = f"({slot})"
                edits.append(Edit(read.start_byte, read.end_byte, slot))
                continue
            edits.append(Edit(read.start_byte, read.end_byte, f"{tile}[{slot}]"))
    halo = ", ".join(f"{t.buffer}[{t.offsets[0]:+d}..{t.offsets[1]:+d}]" for t in m.tiled)
    head = (f"\n{indent}// the block's inputs with their halo ({halo}) read once into shared "
            f"memory")
    lines.append("__syncthreads();")
    edits.append(Edit(m.index_decl.end_byte, m.index_decl.end_byte,
                      head + "".join(f"\n{indent}{l}" for l in lines)))
    source = apply_edits(p.data, edits)
    launch = dataclasses.replace(ctx.launch, block=(str(block),))
    names = ", ".join(f"{t.buffer} (offsets {t.offsets[0]}..{t.offsets[1]})" for t in m.tiled)
    explanation = (f"the block stages {names} in shared memory once, its {block} elements "
                   f"plus the halo the offsets reach, with consecutive threads on consecutive "
                   f"elements: each input element is read from global memory about once "
                   f"instead of once per output that uses it; the original statements, "
                   f"guards and boundary cases are kept, their reads served by the tile; "
                   f"block {block}")
    return PassResult(source=source, launch=launch,
                      tags=("stencil-tile", f"block={block}"), explanation=explanation)
