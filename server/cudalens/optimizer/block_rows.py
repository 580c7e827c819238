"""Recognizing a kernel whose body does not depend on its block size: a block per row.

Kernels in the shape of LLM-training code give each block one row (``int idx = blockIdx.x;``,
launched ``<<<N, block_size, block_size * sizeof(float)>>>``): the block's threads stride over
the row, ``for (int i = tid; i < C; i += blockDim.x)``, each keeping a partial maximum or
sum, and the partials meet in dynamic shared memory (``extern __shared__ float s[];``): each
thread stores ``s[tid]``, a tree over ``blockDim.x`` combines them into ``s[0]``, and every
thread reads ``s[0]``. Such a body covers the same elements, and computes the same row
values, whatever the block (a power of two: the tree), so the grid need not follow the block
for a block-size search to be valid (``launch_config``).

``match`` proves it from the body. Every mention of ``threadIdx.x`` (directly or through a
local ``int tid = threadIdx.x;`` never changed) must be one of:

- the start of a block-stride loop ``for (T i = tid; i < BOUND; i += blockDim.x)`` (``i = i +
  blockDim.x`` too), ``BOUND`` free of thread indices and ``i`` not changed in the loop: the
  block's threads together take ``0 .. BOUND-1`` once each, for any block;
- the whole index of a store ``s[tid] = ...`` into the dynamic shared array (one slot per
  thread; ``cudalens.optimizer.dynamic_shared`` bounds the bytes);
- inside a tree loop over that array (``cudalens.optimizer.block_reduction.tree_loop``, its
  limits written with ``blockDim.x``: M. Harris, "Optimizing Parallel Reduction in CUDA",
  NVIDIA, 2007);
- the test ``if (tid == 0)`` (one thread of any block).

Every mention of ``blockDim.x`` must be the step of a block-stride loop or inside a tree
loop; outside the trees the shared array is read only at ``s[0]``. Nothing may index along y
or z. ``NotBlockRows`` names the first mention that fits none of these, with its line.

A block reduction written with warp shuffles (``cudalens.optimizer.warp_shuffle``) is read
among the kernel's outer statements: a two-level one (its lane and warp locals ``tid % 32``
and ``tid / 32``, its ``__shared__`` partials) combines any block of a multiple of 32
threads up to 1024; a lone warp reduction combines the block only when the block is one
warp, as does a block-stride loop stepped by 32 (``BlockRows.one_warp``: the caller keeps
a block of 32). A result that only thread 0 holds (after ``__shfl_down_sync``, or a second
level that warp 0 alone loads) may be read only inside ``if (tid == 0)``; a warp primitive,
a lane or warp local or the partials anywhere else raise ``NotWarpRows``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.kernel_model.loops import for_header
from cudalens.kernel_model.syntax import Parsed, named_children, unparen, walk
from cudalens.optimizer import block_reduction, warp_shuffle
from cudalens.optimizer.affine import builtin_field, strip_casts
from cudalens.optimizer.dynamic_shared import extern_arrays
from cudalens.optimizer.reasons import LocatedError

_TID, _DIM = "threadIdx.x", "blockDim.x"


class NotBlockRows(LocatedError):
    """The body depends on its block size (or the module cannot tell); says where."""


class NotWarpRows(NotBlockRows):
    """A body whose warp shuffles (``cudalens.optimizer.warp_shuffle``) are not a block
    reduction the module reads; says where."""


@dataclass(frozen=True)
class BlockRows:
    """A block-size-agnostic body: ``shared`` its dynamic shared array (None without one),
    ``tids``/``dims`` the locals equal to ``threadIdx.x``/``blockDim.x``, ``trees`` its tree
    loops as (loop, form, combine), ``strided`` its block-stride loops; ``warps`` its warp
    reductions that stand alone and ``levels`` its two-level block reductions
    (``cudalens.optimizer.warp_shuffle``); ``one_warp`` (line, why) when the body combines
    the block only if the block is one warp of 32 threads; ``names`` the lane and warp
    locals (``tid % 32``, ``tid / 32``) and ``statics`` the ``__shared__`` arrays of the
    two-level reductions."""

    shared: Optional[str]
    tids: frozenset
    dims: frozenset
    trees: tuple[tuple[tree_sitter.Node, int, str], ...]
    strided: tuple[tree_sitter.Node, ...]
    warps: tuple[warp_shuffle.WarpReduce, ...] = ()
    levels: tuple[warp_shuffle.TwoLevel, ...] = ()
    one_warp: Optional[tuple[int, str]] = None
    names: frozenset = frozenset()
    statics: frozenset = frozenset()
    pragmas: tuple[tree_sitter.Node, ...] = ()

    def in_tree(self, node: tree_sitter.Node) -> bool:
        """``node`` lies inside one of the tree loops."""
        return any(t.start_byte <= node.start_byte < t.end_byte for t, _, _ in self.trees)


def _short(parsed: Parsed, node: tree_sitter.Node) -> str:
    text = " ".join(parsed.text_of(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _is(node: Optional[tree_sitter.Node], parsed: Parsed, builtin: str, names) -> bool:
    if node is None:
        return False
    node = strip_casts(node, parsed)
    if node.type == "identifier":
        return parsed.text_of(node) in names
    return builtin_field(node, parsed) == builtin


def _span(node: tree_sitter.Node) -> tuple[int, int]:
    return node.start_byte, node.end_byte


def _stride_loop(loop: tree_sitter.Node, parsed: Parsed, tids, dims,
                 warp: Optional[list] = None) -> bool:
    """``for (T i = tid; i < BOUND; i += blockDim.x)`` with ``i`` unchanged in the body and
    ``BOUND`` free of thread indices; with ``warp`` (a list), a step of 32 (``WARP_SIZE``,
    ``warpSize``) too, the loop then appended to ``warp``."""
    head = for_header(loop, parsed)
    if head is None or not _is(head.start, parsed, _TID, tids):
        return False
    cond = head.cond
    if cond.type != "binary_expression" or cond.child_by_field_name("operator").type != "<" or \
            parsed.text_of(unparen(cond.child_by_field_name("left"))) != head.var:
        return False
    bound = cond.child_by_field_name("right")
    if any(_is(n, parsed, _TID, tids) or _is(n, parsed, _DIM, dims) for n in walk(bound)):
        return False
    upd = unparen(head.update)
    if upd.type != "assignment_expression" or \
            parsed.text_of(unparen(upd.child_by_field_name("left"))) != head.var:
        return False
    op, right = upd.child_by_field_name("operator").type, unparen(upd.child_by_field_name("right"))
    if op == "+=":
        step = right
    elif op == "=" and right.type == "binary_expression" and \
            right.child_by_field_name("operator").type == "+" and \
            parsed.text_of(unparen(right.child_by_field_name("left"))) == head.var:
        step = right.child_by_field_name("right")
    else:
        return False
    by_warp = not _is(step, parsed, _DIM, dims)
    if by_warp and (warp is None or
                    warp_shuffle.value(step, parsed, warp_shuffle.constants(parsed)) != 32):
        return False
    for n in walk(head.body) if head.body is not None else ():
        if n.type in ("assignment_expression", "update_expression"):
            t = n.child_by_field_name("left") or n.child_by_field_name("argument")
            if t is not None and parsed.text_of(unparen(t)) == head.var:
                return False
    if by_warp:
        warp.append(loop)
    return True


def zero_test(cond: tree_sitter.Node, parsed: Parsed, tids) -> bool:
    """``tid == 0``, ``0 == tid`` or ``!tid``."""
    cond = unparen(cond)
    if cond.type == "binary_expression" and cond.child_by_field_name("operator").type == "==":
        a, b = cond.child_by_field_name("left"), cond.child_by_field_name("right")
        return (_is(a, parsed, _TID, tids) and parsed.text_of(unparen(b)) == "0") or \
            (_is(b, parsed, _TID, tids) and parsed.text_of(unparen(a)) == "0")
    return cond.type == "unary_expression" and \
        cond.child_by_field_name("operator").type == "!" and \
        _is(cond.child_by_field_name("argument"), parsed, _TID, tids)


def match(parsed: Parsed, body: tree_sitter.Node) -> BlockRows:
    """``body`` read as a block-size-agnostic body (module doc).

    Raises:
        NotBlockRows: a mention of the thread index, the block size or the shared array
            that fits none of the module doc's positions (the message names it and its line).
    """
    stmts = named_children(body)
    tids = frozenset(block_reduction.fixed_names(stmts, body, parsed, _TID))
    dims = frozenset(block_reduction.fixed_names(stmts, body, parsed, _DIM))
    arrays = extern_arrays(body, parsed)
    if len(arrays) > 1:
        raise NotBlockRows(f"the kernel has {len(arrays)} dynamic shared arrays "
                           f"({', '.join(sorted(arrays))}); the pass reads one")
    shared = next(iter(arrays), None)
    trees: list[tuple[tree_sitter.Node, int, str]] = []
    strided: list[tree_sitter.Node] = []
    by_warp: list[tree_sitter.Node] = []
    allowed: set[tuple[int, int]] = set()
    for n in walk(body):
        if n.type == "declaration":  # int tid = threadIdx.x; the initializer is the name
            for d in n.children_by_field_name("declarator"):
                name = d.child_by_field_name("declarator") if d.type == "init_declarator" \
                    else None
                if name is not None and parsed.text_of(name) in tids | dims:
                    allowed.add(_span(d.child_by_field_name("value")))
        if n.type != "for_statement":
            continue
        if shared is not None and any(x.type == "identifier" and parsed.text_of(x) == shared
                                      for x in walk(n)):
            try:
                form, combine = block_reduction.tree_loop(n, parsed, shared, set(tids), set(dims))
            except block_reduction.NotTreeReduction:
                pass
            else:
                trees.append((n, form, combine))
                continue
        if _stride_loop(n, parsed, tids, dims, by_warp):
            strided.append(n)
            head = for_header(n, parsed)
            allowed |= {_span(head.start), _span(strip_casts(head.start, parsed)),
                        _span(head.update)}
    shuffled = _shuffles(parsed, body, stmts, tids, dims, allowed)
    one_warp = None
    if by_warp:
        one_warp = (parsed.line_of(by_warp[0]), "steps its loop over the row by 32 threads")
    elif shuffled[0]:
        one_warp = (shuffled[0][0].line, "combines one warp's values only")
    rows = BlockRows(shared, tids, dims, tuple(trees), tuple(strided), shuffled[0],
                     shuffled[1], one_warp, shuffled[2], shuffled[3], shuffled[4])
    if rows.warps or rows.levels:
        _holders(parsed, body, rows, tids)
    for n in walk(body):
        if n.type == "if_statement" and zero_test(n.child_by_field_name("condition"), parsed,
                                                   tids):
            allowed.add(_span(unparen(n.child_by_field_name("condition"))))
        if shared is not None and n.type == "assignment_expression" and \
                n.child_by_field_name("operator").type == "=":
            left = unparen(n.child_by_field_name("left"))
            if left.type == "subscript_expression" and \
                    parsed.text_of(left.child_by_field_name("argument")) == shared:
                idx = named_children(left.child_by_field_name("indices"))
                if len(idx) == 1 and _is(idx[0], parsed, _TID, tids):
                    allowed.add(_span(idx[0]))
    for n in walk(body):
        line = parsed.line_of(n)
        if n.type == "field_expression":
            field = builtin_field(n, parsed)
            if field in ("threadIdx.y", "threadIdx.z", "blockDim.y", "blockDim.z"):
                raise NotBlockRows(f"the body uses {field} (line {line}); only 1D blocks are "
                                   f"read", line)
        if n.type == "identifier" and parsed.text_of(n) in rows.names | rows.statics and \
                not _covered(n, allowed) and not _declared_here(n):
            raise NotWarpRows(f"'{_short(parsed, n.parent)}' (line {line}) uses "
                               f"{parsed.text_of(n)} other than in a warp or two-level block "
                               f"reduction (its lane, warp or shared partials)", line)
        if n.type == "call_expression" and not _covered(n, allowed):
            fn = n.child_by_field_name("function")
            fn = fn.child_by_field_name("name") if fn.type == "template_function" else fn
            name = parsed.text_of(fn)
            if warp_shuffle.WARP_PRIMITIVES.fullmatch(name) or name in _shuffle_helpers(parsed):
                raise NotWarpRows(f"'{_short(parsed, n)}' (line {line}) exchanges values "
                                   f"between lanes other than as a warp reduction statement "
                                   f"of the kernel's outer block (alone in a block of 32 "
                                   f"threads, or the two levels of a block reduction)", line)
        tid = n.type == "identifier" and parsed.text_of(n) in tids or \
            n.type == "field_expression" and builtin_field(n, parsed) == _TID
        dim = n.type == "identifier" and parsed.text_of(n) in dims or \
            n.type == "field_expression" and builtin_field(n, parsed) == _DIM
        if (tid or dim) and n.parent is not None and n.parent.type == "init_declarator" and \
                n.parent.child_by_field_name("declarator") == n:
            continue  # the local being declared
        if (tid or dim) and not rows.in_tree(n) and not _covered(n, allowed):
            what = "threadIdx.x" if tid else "blockDim.x"
            shown = n.parent if n.parent is not None and n.parent.type != "compound_statement" \
                else n
            raise NotBlockRows(
                f"'{_short(parsed, shown)}' (line {line}) uses {what} other than to start or "
                f"step a loop over the row (for (i = tid; i < n; i += blockDim.x)), to store "
                f"the thread's slot of shared memory, in a tree over blockDim.x or in 'if "
                f"(tid == 0)': the work may depend on the block size", line)
        if shared is not None and n.type == "subscript_expression" and \
                parsed.text_of(n.child_by_field_name("argument")) == shared and \
                not rows.in_tree(n):
            idx = named_children(n.child_by_field_name("indices"))
            plain = len(idx) == 1 and (parsed.text_of(unparen(idx[0])) == "0" or
                                       _span(idx[0]) in allowed)
            if not plain:
                raise NotBlockRows(f"'{_short(parsed, n)}' (line {line}) reads {shared} outside "
                                   f"a tree at another element than {shared}[0]: what it holds "
                                   f"depends on the block size", line)
    return rows


def _declared_here(n: tree_sitter.Node) -> bool:
    """``n`` is the name a declarator declares (``int lane`` of ``int lane = ...``, the
    array of ``__shared__ float s[32]``)."""
    p = n.parent
    while p is not None and p.type in ("array_declarator", "init_declarator") and \
            p.child_by_field_name("declarator") == n:
        n, p = p, p.parent
    return p is not None and p.type == "declaration" and n in p.children_by_field_name(
        "declarator")


def _shuffle_helpers(parsed: Parsed) -> set[str]:
    """The file's functions whose body calls a warp primitive (``__shfl_xor_sync``...)."""
    found = set()
    for n in walk(parsed.tree.root_node):
        if n.type == "function_definition" and any(
                c.type == "identifier" and warp_shuffle.WARP_PRIMITIVES.fullmatch(
                    parsed.text_of(c)) for c in walk(n.child_by_field_name("body"))):
            decl = n.child_by_field_name("declarator")
            while decl is not None and decl.type != "function_declarator":
                decl = decl.child_by_field_name("declarator")
            if decl is not None:
                found.add(parsed.text_of(decl.child_by_field_name("declarator")))
    return found


def _static_arrays(parsed: Parsed, body: tree_sitter.Node, env) -> dict[str, int]:
    """The kernel's ``__shared__ T name[N];`` arrays with ``N`` an integer, by name."""
    found = {}
    for n in walk(body):
        if n.type != "declaration" or "__shared__" not in parsed.text_of(n) or \
                "extern" in parsed.text_of(n).split():
            continue
        for d in n.children_by_field_name("declarator"):
            if d.type == "array_declarator":
                size = warp_shuffle.value(d.child_by_field_name("size"), parsed, env)
                if size is not None:
                    found[parsed.text_of(d.child_by_field_name("declarator"))] = size
    return found


def _shuffles(parsed: Parsed, body: tree_sitter.Node, stmts, tids, dims, allowed):
    """(lone warp reductions, two-level reductions, lane and warp names, their shared
    arrays, the ``#pragma unroll`` lines right before their loops) among the kernel's outer statements ``stmts``; the spans they cover are added
    to ``allowed``.

    Raises:
        NotWarpRows: a statement that starts a warp reduction and is not one of
            ``warp_shuffle``'s forms.
    """
    if not any(n.type == "identifier" and warp_shuffle.WARP_PRIMITIVES.fullmatch(
            parsed.text_of(n)) for n in walk(parsed.tree.root_node)):
        return (), (), frozenset(), frozenset(), ()
    # '#pragma unroll' before a shuffle loop: not a statement of the reduction's sequence
    pragmas = tuple(s for s in stmts if s.type == "preproc_call" and
                    " ".join(parsed.text_of(s).split()).startswith("#pragma unroll"))
    stmts = [s for s in stmts if s not in pragmas]
    env = warp_shuffle.constants(parsed)
    known = warp_shuffle.helpers(parsed)
    changed = set(block_reduction_assigned(body, parsed))
    kinds: dict[str, str] = {}
    for s in stmts:
        got = warp_shuffle.lane_warp(s, parsed, tids, env)
        if got is not None and got[0] not in changed:
            kinds[got[0]] = got[1]
            d = s.children_by_field_name("declarator")[0]
            allowed.add(_span(d.child_by_field_name("value")))

    def names(node, what):
        node = strip_casts(unparen(node), parsed)
        if node.type == "identifier" and kinds.get(parsed.text_of(node)) == what:
            return True
        if what == "tid":
            return _is(node, parsed, _TID, tids)
        return warp_shuffle.lane_or_warp(node, parsed, tids, env) == what

    arrays = _static_arrays(parsed, body, env)
    singles, levels = [], []
    i = 0
    while i < len(stmts):
        try:
            w = warp_shuffle.reduction(stmts[i], parsed, known)
        except warp_shuffle.NotWarpReduction as exc:
            raise NotWarpRows(str(exc), exc.line) from None
        if w is None:
            i += 1
            continue
        nxt = stmts[i + 1] if i + 1 < len(stmts) else None
        if nxt is not None and any(x.type == "identifier" and parsed.text_of(x) in arrays
                                   for x in walk(nxt)):
            try:
                two = warp_shuffle.two_level(stmts, i, w, parsed, names, known, tids, dims,
                                             arrays)
            except warp_shuffle.NotWarpReduction as exc:
                raise NotWarpRows(str(exc), exc.line) from None
            levels.append(two)
            allowed.update(_span(x) for x in two.nodes)
            i += 5
            continue
        singles.append(w)
        allowed.add(_span(w.node))
        i += 1
    for a, b in zip(levels, levels[1:]):  # a barrier before the partials are written again
        if a.array == b.array and not any(
                "".join(parsed.text_of(s).split()) == "__syncthreads();" for s in stmts
                if a.load.end_byte <= s.start_byte and s.end_byte <= b.store.start_byte):
            raise NotWarpRows(f"no __syncthreads(); between the load of {a.array} at line "
                               f"{parsed.line_of(a.load)} and its store at line "
                               f"{parsed.line_of(b.store)}: the warps may overwrite partials "
                               f"not yet read", parsed.line_of(b.store))
    used = frozenset(t.array for t in levels)
    loops = [n for n in [w.node for w in singles] + [x for t in levels for x in t.nodes]
             if n.type == "for_statement"]
    before = tuple(q for q in pragmas if any(q.end_byte <= n.start_byte and not parsed.data[
        q.end_byte:n.start_byte].strip() for n in loops))
    return tuple(singles), tuple(levels), frozenset(kinds), used, before


def block_reduction_assigned(body: tree_sitter.Node, parsed: Parsed) -> dict[str, int]:
    from cudalens.kernel_model.syntax import assigned_names

    return assigned_names(body, parsed)


def _holders(parsed: Parsed, body: tree_sitter.Node, rows: BlockRows, tids) -> None:
    """A result that only thread 0 (or lane 0, or warp 0) holds is read only inside ``if
    (tid == 0)``.

    Raises:
        NotWarpRows: a read elsewhere (its value there depends on the block).
    """
    ends = [(w.node.end_byte, w.result, w.everyone, w.line) for w in rows.warps] + \
        [(t.second.node.end_byte, t.second.result, t.everyone, t.first.line)
         for t in rows.levels]
    zero = [n.child_by_field_name("consequence") for n in walk(body)
            if n.type == "if_statement" and
            zero_test(n.child_by_field_name("condition"), parsed, tids)]
    spans = [(t.store.start_byte, t.store.end_byte) for t in rows.levels]
    for end, name, everyone, line in ends:
        if everyone:
            continue
        for n in walk(body):
            if n.start_byte < end or n.type != "identifier" or parsed.text_of(n) != name:
                continue
            if any(c is not None and c.start_byte <= n.start_byte < c.end_byte for c in zero) \
                    or any(a <= n.start_byte < b for a, b in spans):
                continue
            at = parsed.line_of(n)
            raise NotWarpRows(f"'{_short(parsed, n.parent)}' (line {at}) reads {name}, which "
                               f"after the reduction at line {line} only thread 0 is sure to "
                               f"hold, outside 'if (tid == 0)'", at)


def _covered(node: tree_sitter.Node, allowed: set[tuple[int, int]]) -> bool:
    """``node`` is, or lies inside, one of the ``allowed`` spans."""
    return any(a <= node.start_byte and node.end_byte <= b for a, b in allowed)


def strides(parsed: Parsed, body: tree_sitter.Node) -> bool:
    """``body`` has a block-stride loop over a row (``for (i = tid; i < n; i += blockDim.x)``
    or by 32): the shape of a block per row, whatever else it does."""
    stmts = named_children(body)
    tids = frozenset(block_reduction.fixed_names(stmts, body, parsed, _TID))
    dims = frozenset(block_reduction.fixed_names(stmts, body, parsed, _DIM))
    return any(n.type == "for_statement" and _stride_loop(n, parsed, tids, dims, [])
               for n in walk(body))


def tree_ok(parsed: Parsed, body: tree_sitter.Node) -> bool:
    """Every element of the dynamic shared array whose index is not affine in the thread
    index lies inside a tree loop over ``blockDim.x`` (``match``'s trees), so a block of
    ``B`` threads (a power of two) reaches only ``s[0 .. B-1]`` there; False when ``body`` is
    not block-size agnostic."""
    try:
        rows = match(parsed, body)
    except NotBlockRows:
        return False
    return rows.shared is not None and bool(rows.trees)
