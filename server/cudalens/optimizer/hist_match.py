"""Recognizing a histogram built with global atomics, one thread per input element.

The shape (names, index type and operand order free; casts and parentheses allowed)::

    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { STATEMENTS }            // or: if (i >= n) return; STATEMENTS

where, in STATEMENTS, one pointer parameter ``bins`` appears only as the first argument of
``atomicAdd(&bins[k], v)`` or ``atomicAdd(bins + k, v)``, every other pointer parameter is
only read, and nothing depends on which thread runs an element (no thread-index builtins
but through ``i``, no barriers, warp intrinsics, other atomics, ``__shared__``, ``return``).
The elements are then independent updates of a sum per bin, which any assignment of elements
to threads, and any order of the additions, computes the same (exactly for integer counts).

The spec must give ``bins`` an integer or float element type and a length that evaluates to
a constant (the number of bins, sized for shared memory), and a 1D block and grid.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.kernel_model.model import readable_body_or
from cudalens.kernel_model.syntax import Parsed, assigned_names, named_children, unparen, walk
from cudalens.kernel_model.syntax import short_text as _short
from cudalens.optimizer import elementwise
from cudalens.optimizer.affine import Scope, poly_of
from cudalens.optimizer.context import PassContext
from cudalens.optimizer.macros import file_macros
from cudalens.optimizer.pointer_uses import classify
from cudalens.optimizer.reasons import LocatedError
from cudalens.optimizer.structural import block_dependence, element_bytes
from cudalens.spec import dtypes
from cudalens.spec import expr as spec_expr
from cudalens.spec.model import BufferDecl
from cudalens.spec.poly import Poly
from cudalens.spec.resolve import LABELS, sizes_for

MAX_BINS_BYTES = 48 * 1024  # static __shared__ per block
_TIED = re.compile(r"^(threadIdx|blockIdx|blockDim|gridDim|__syncthreads\w*|__syncwarp|"
                   r"__threadfence\w*|__shfl\w*|__ballot\w*|__any\w*|__all\w*|__activemask|"
                   r"__match\w*|__reduce\w*|atomic\w*)$")


class NotHistogram(LocatedError):
    """The kernel is not the recognized histogram; the message says why, with the line."""


@dataclass(frozen=True)
class Histogram:
    """A matched histogram kernel.

    ``index``/``index_type``/``index_init``: the element index, its C type and initializer
    text; ``bound``: the guard's bound (C text) and ``bound_spec`` as a spec expression;
    ``guarded``: the statements run per element; ``hist``: the histogram pointer's name,
    ``hist_uses`` its identifier nodes (each the first argument of an ``atomicAdd``);
    ``element_type``: its C element type (``unsigned int``); ``element_bytes``; ``bins``: the
    number of bins (the spec's length of ``hist``, the larger of the nominal and ragged
    runs); ``block``: the spec's block size; ``float_counts``: the bins hold floats;
    ``index_decl``: the declaration of ``index`` (the body's first statement).
    """

    parsed: Parsed
    index: str
    index_type: str
    index_init: str
    bound: str
    bound_spec: str
    guarded: tuple[tree_sitter.Node, ...]
    hist: str
    hist_uses: tuple[tree_sitter.Node, ...]
    element_type: str
    element_bytes: int
    bins: int
    block: int
    float_counts: bool
    index_decl: Optional[tree_sitter.Node] = None


def _fail(msg: str, line: Optional[int] = None) -> NotHistogram:
    return NotHistogram(msg, line)


def _atomic_target(ident: tree_sitter.Node, parsed: Parsed) -> Optional[tree_sitter.Node]:
    """The ``atomicAdd`` call when ``ident`` is inside its first argument as ``&p[k]`` or
    ``p + k`` (parentheses allowed), else None."""
    node = ident
    while node.parent is not None and node.parent.type in ("parenthesized_expression",
                                                           "binary_expression",
                                                           "subscript_expression",
                                                           "pointer_expression"):
        parent = node.parent
        if parent.type == "binary_expression" and \
                parent.child_by_field_name("operator").type != "+":
            return None
        if parent.type == "subscript_expression" and \
                parent.child_by_field_name("argument") != node:
            return None
        if parent.type == "pointer_expression" and \
                parent.child_by_field_name("operator").type != "&":
            return None
        node = parent
    args = node.parent
    if args is None or args.type != "argument_list" or named_children(args)[:1] != [node]:
        return None
    call = args.parent
    fn = call.child_by_field_name("function") if call is not None else None
    if fn is None or parsed.text_of(fn) != "atomicAdd" or len(named_children(args)) != 2:
        return None
    # the index / offset must not be the histogram itself
    return call


def global_index(stmt: tree_sitter.Node, parsed: Parsed,
                 block_x: int) -> tuple[str, str, tree_sitter.Node]:
    """(name, C type, initializer) of ``T i = blockIdx.x * blockDim.x + threadIdx.x;`` in any
    spelling whose value is that polynomial (macros expanded, casts looked through, a
    constant equal to the spec's ``block_x`` for ``blockDim.x``).

    Raises:
        elementwise.NotElementwise: ``stmt`` is not such a declaration.
    """
    try:
        return elementwise._index_declaration(stmt, parsed)
    except elementwise.NotElementwise as first:
        if stmt.type != "declaration":
            raise
        decls = stmt.children_by_field_name("declarator")
        if len(decls) != 1 or decls[0].type != "init_declarator":
            raise
        value = decls[0].child_by_field_name("value")
        scope = Scope(macros=file_macros(parsed))
        got = poly_of(value, parsed, scope)
        want = Poly.sym("blockIdx.x") * Poly.const(block_x) + Poly.sym("threadIdx.x")
        if got is None or got.substitute(
                lambda s: Poly.const(block_x) if s == "blockDim.x" else Poly.sym(s)) != want:
            raise first
        ctype = " ".join(parsed.text_of(stmt.child_by_field_name("type")).split())
        spec_type = dtypes.spec_type_for_c(ctype)
        if spec_type is None or dtypes.is_float(spec_type):
            raise first
        return parsed.text_of(decls[0].child_by_field_name("declarator")), ctype, value


def _spec_bins(ctx: PassContext, decl: BufferDecl, hist: str) -> int:
    """The larger of ``decl.length`` over the nominal and ragged sizes."""
    values = []
    for label in LABELS:
        try:
            env = sizes_for(ctx.spec, label)
            values.append(spec_expr.evaluate(decl.length, env))
        except (spec_expr.ExprError, ValueError) as exc:
            raise _fail(f"the length of {hist} ('{decl.length}') is not a constant of the "
                        f"spec's sizes: {exc}") from None
    if not all(isinstance(v, int) and v > 0 for v in values):
        raise _fail(f"the length of {hist} ('{decl.length}') is not a positive integer")
    return max(values)


def match(ctx: PassContext) -> Histogram:
    """Matches ``ctx``'s kernel (module doc).

    Raises:
        NotHistogram: the kernel or its spec do not fit; the message says why, with the line.
    """
    k = ctx.kernel
    parsed, body = readable_body_or(ctx, _fail)
    if re.search(r"\b(threadIdx|blockIdx|blockDim|gridDim)\s*\.\s*[yz]\b", parsed.text_of(body)):
        raise _fail("the kernel indexes along y or z; the pass rewrites 1D histograms")
    stmts = named_children(body)
    if not stmts:
        raise _fail(f"the body of {k.name} is empty")
    from cudalens.optimizer.passes.launch_config import baseline_block
    block = baseline_block(ctx)
    if block is None:
        raise _fail("the spec's block cannot be evaluated")
    try:
        index, index_type, init = global_index(stmts[0], parsed, block[0])
        if len(stmts) < 2:
            raise _fail(f"expected the bounds guard 'if ({index} < n)' after line "
                        f"{parsed.line_of(stmts[0])}", line=parsed.line_of(stmts[0]))
        form, bound_node = elementwise._guard(stmts[1], parsed, index)
        bound_spec = elementwise._bound_spec(bound_node, parsed, ctx)
        guarded = elementwise.guarded(stmts, form, parsed)
    except elementwise.NotElementwise as exc:
        raise _fail(str(exc), exc.line) from None
    if not guarded:
        raise _fail("the guarded body is empty")
    pointers = {p.name: p for p in k.parameters if p.is_pointer}
    hist_uses: dict[str, list] = {}
    other: list = []
    calls: list = []
    for stmt in guarded:
        for ident in walk(stmt):
            if ident.type != "identifier" or parsed.text_of(ident) not in pointers:
                continue
            use = classify(ident, parsed)
            call = _atomic_target(ident, parsed) if use.kind == "escape" else None
            if call is not None:
                hist_uses.setdefault(use.name, []).append(ident)
                calls.append(call)
            else:
                other.append(use)
    if not hist_uses:
        raise _fail("no atomicAdd(&bins[k], v) on a pointer parameter in the guarded body "
                    "(not a global-atomics histogram)", line=parsed.line_of(guarded[0]))
    if len(hist_uses) > 1:
        raise _fail(f"atomicAdd on several pointers ({', '.join(sorted(hist_uses))}); the pass "
                    f"privatizes one histogram")
    hist = next(iter(hist_uses))
    for use in other:
        if use.name == hist:
            raise _fail(f"{hist} is also used outside atomicAdd ('{use.text}' at line "
                        f"{use.line}); a private copy would miss that", line=use.line)
        if use.kind != "read":
            raise _fail(f"writes through {use.name} ('{use.text}' at line {use.line}); the "
                        f"pass handles kernels whose only writes are the histogram's atomics",
                        line=use.line)
    call_keys = {(c.start_byte, c.end_byte) for c in calls}
    for stmt in guarded:
        for n in walk(stmt):
            line = parsed.line_of(n)
            if n.type == "identifier" and _TIED.match(parsed.text_of(n)):
                word = parsed.text_of(n)
                call = n.parent
                if word == "atomicAdd" and call is not None and \
                        (call.start_byte, call.end_byte) in call_keys:
                    continue
                raise _fail(f"the per-element statements use {word} at line {line}: they "
                            f"depend on which thread runs them", line=line)
            if n.type == "__shared__":
                raise _fail(f"the body declares __shared__ memory at line {line}", line=line)
            if n.type in ("return_statement", "goto_statement", "break_statement",
                          "continue_statement"):
                raise _fail(f"'{_short(parsed, n)}' at line {line} inside the per-element "
                            f"statements", line=line)
    for call in calls:
        args = named_children(call.child_by_field_name("arguments"))
        if any(parsed.text_of(n) == hist for n in walk(args[1]) if n.type == "identifier"):
            raise _fail(f"the value added at line {parsed.line_of(call)} reads {hist}",
                        line=parsed.line_of(call))
    assigned = assigned_names(stmts[1], parsed) if form == "if" else {}
    for stmt in guarded:
        assigned.update(assigned_names(stmt, parsed))
    if index in assigned:
        raise _fail(f"the body changes {index} at line {assigned[index]}",
                    line=assigned[index])
    try:
        decl = ctx.spec.param(hist)
    except KeyError:
        decl = None
    if not isinstance(decl, BufferDecl) or decl.role == "in":
        raise _fail(f"the spec does not declare {hist} as an out or inout buffer")
    spec_type = dtypes.numpy_dtype(decl.type)
    if spec_type not in ("int32", "uint32", "int64", "uint64", "float32", "float64"):
        raise _fail(f"{hist} holds {decl.type}; the pass privatizes 4- or 8-byte integer or "
                    f"float counts")
    param = pointers[hist]
    etype = " ".join(w for w in param.type.split() if w not in ("const", "volatile",
                                                                "__restrict__"))
    nbytes = element_bytes(decl.type)
    bins = _spec_bins(ctx, decl, hist)
    if bins * nbytes > MAX_BINS_BYTES:
        raise _fail(f"{hist} has {bins} bins of {nbytes} bytes ({bins * nbytes} bytes), more "
                    f"than the {MAX_BINS_BYTES} bytes of static shared memory a block has")
    launch = ctx.launch
    if any(b.strip() != "1" for b in launch.block[1:]) or \
            any(g.strip() != "1" for g in launch.grid[1:]):
        raise _fail("the spec's block or grid is not 1D")
    reason = block_dependence(ctx)
    if reason:
        raise _fail(reason)
    return Histogram(parsed, index, index_type, parsed.text_of(init),
                     parsed.text_of(unparen(bound_node)), bound_spec, tuple(guarded), hist,
                     tuple(hist_uses[hist]), etype, nbytes, bins, block[0],
                     dtypes.is_float(decl.type), stmts[0])
