"""Pass ``block_per_row``: a one-thread-per-row kernel becomes one thread block per row, for
long rows; and single-pass online softmax for the row's max and sum of exponentials.

The kernels are those ``warp_per_row`` recognizes (its module doc: a row index, a guard, loops
over the row's columns with sums and maxima, per-row stores). A warp per row leaves each
lane ``cols / 32`` elements; from about a thousand columns a block of ``B`` threads per row
gives each thread ``cols / B`` and keeps more loads in flight per row. Each loop's
accumulators are combined in two steps: across each warp with ``__shfl_xor_sync`` (every lane
gets the warp's value), then lane 0 of each warp writes it to a ``__shared__`` slot and after a
barrier every thread combines the block's warp slots in the same order, so every thread holds
the same row value (CUDA C++ Programming Guide, "Warp Shuffle Functions"; M. Harris,
"Optimizing Parallel Reduction in CUDA", NVIDIA, 2007). Per-row stores are done by thread 0.
The guard's ``return`` is the same for the whole block (one row per block), so every thread
reaches every barrier.

Online softmax (``online``): where a loop computing a maximum ``m = fmaxf(m, E)`` is followed,
over the same columns, by a loop summing ``s += expf(E - m)``, the two become one loop keeping a
running maximum and a sum rescaled when the maximum grows (M. Milakov and N. Gimelshein,
"Online normalizer calculation for softmax", arXiv:1805.02867, 2018): ``if (v > m) { s = s *
expf(m - v) + 1; m = v; } else s += expf(v - m);``, and partial ``(m, s)`` pairs of two threads
merge as ``M = max(m1, m2), s = s1 * expf(m1 - M) + s2 * expf(m2 - M)``. The maximum is exact;
the sum is the same sum rounded differently (within the tolerance the runner checks). The row
is read twice instead of three times. The same fusion is offered by ``warp_per_row``
(``online``), whose combine is the warp step alone.

Chosen by row length: the pass applies when the loops' bound, at the spec's sizes, is at
least ``MIN_COLUMNS`` (or cannot be evaluated); ``warp_per_row`` is offered for every length.

Parameters: ``block`` (256, 512, 128, 1024), ``online`` (where the loops allow it, first),
``gridstride``: the blocks loop over the rows (``row += gridDim.x``), so the kernel is also
correct under any launch whose block is a multiple of 32 threads, the user's included (a
drop-in, ``cudalens.dropin``), offered unless the body returns after the guard.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.passes import warp_per_row as wpr
from cudalens.optimizer.syntax import (Edit, apply_edits, for_header, fresh_name, identifiers,
                                       less_than_bound, line_indent, named_children, unparen)
from cudalens.spec import expr as spec_expr

name = "block_per_row"

BLOCKS = (256, 512, 128, 1024)
MIN_COLUMNS = 1024
WARP = 32
EXPS = ("expf", "__expf", "exp")
MAXES = ("fmaxf", "fmax", "max")


@dataclass(frozen=True)
class Online:
    """A max loop and the sum-of-exponentials loop after it, fused (module doc)."""

    first: "wpr._Loop"  # m = fmaxf(m, E)
    second: "wpr._Loop"  # s += expf(E - m)
    m: str
    s: str
    value: str  # E in the second loop's column variable
    exp: str
    max: str
    ctype: str


def _one_statement(loop: tree_sitter.Node) -> Optional[tree_sitter.Node]:
    body = loop.child_by_field_name("body")
    while body is not None and body.type == "compound_statement":
        inner = named_children(body)
        if len(inner) != 1:
            return None
        body = inner[0]
    if body is None or body.type != "expression_statement" or not named_children(body):
        return None
    return named_children(body)[0]


def _norm(text: str) -> str:
    return " ".join(text.split()).replace("( ", "(").replace(" )", ")")


def _decl_type(m: "wpr._Match", var: str) -> Optional[str]:
    p = m.parsed
    for stmt in m.work:
        if stmt.type != "declaration":
            continue
        for d in stmt.children_by_field_name("declarator"):
            if d.type == "init_declarator" and p.text_of(d.child_by_field_name("declarator")) == var:
                t = stmt.child_by_field_name("type")
                return p.text_of(t) if t is not None else None
    return None


def online_pair(m: "wpr._Match") -> Optional[Online]:
    """The first (max loop, sum-of-exponentials loop) pair the online form can fuse, or None."""
    p = m.parsed
    for a, b in zip(m.loops, m.loops[1:]):
        if len(a.accumulators) != 1 or len(b.accumulators) != 1 or \
                a.accumulators[0][1] not in MAXES or b.accumulators[0][1] != "+":
            continue
        mx, s = a.accumulators[0][0], b.accumulators[0][0]
        ha, hb = for_header(a.node, p), for_header(b.node, p)
        if _norm(p.text_of(ha.start)) != _norm(p.text_of(hb.start)) or \
                _norm(p.text_of(less_than_bound(ha, p))) != _norm(p.text_of(less_than_bound(hb, p))):
            continue
        between = [w for w in m.work if a.node.end_byte <= w.start_byte < b.node.start_byte]
        if any(w.type != "declaration" or mx in identifiers(w, p) for w in between):
            continue
        sa, sb = _one_statement(a.node), _one_statement(b.node)
        if sa is None or sb is None:
            continue
        args = named_children(unparen(sa.child_by_field_name("right")).child_by_field_name(
            "arguments")) if unparen(sa.child_by_field_name("right")).type == "call_expression" \
            else []
        others = [x for x in args if p.text_of(unparen(x)) != mx]
        if len(args) != 2 or len(others) != 1:
            continue
        value_a = p.text_of(others[0])
        term = _sum_term(sb, s, p)
        if term is None or term.type != "call_expression":
            continue
        fn = p.text_of(term.child_by_field_name("function"))
        targs = named_children(term.child_by_field_name("arguments"))
        if fn not in EXPS or len(targs) != 1:
            continue
        diff = unparen(targs[0])
        if diff.type != "binary_expression" or diff.child_by_field_name("operator").type != "-" \
                or p.text_of(unparen(diff.child_by_field_name("right"))) != mx:
            continue
        value_b = p.text_of(diff.child_by_field_name("left"))
        renamed = re.sub(rf"\b{re.escape(a.var)}\b", b.var, value_a)
        if _norm(renamed) != _norm(value_b) or \
                {mx, s} & set(re.findall(r"\w+", value_b)):
            continue
        ctype = _decl_type(m, mx)
        if ctype is None or _decl_type(m, s) is None:
            continue
        kind = a.accumulators[0][1]
        return Online(a, b, mx, s, value_b, fn, kind, ctype)
    return None


def _sum_term(stmt: tree_sitter.Node, s: str, p) -> Optional[tree_sitter.Node]:
    if stmt.type != "assignment_expression":
        return None
    op = stmt.child_by_field_name("operator").type
    right = unparen(stmt.child_by_field_name("right"))
    if op == "+=":
        return right
    if op == "=" and right.type == "binary_expression" and \
            right.child_by_field_name("operator").type == "+":
        a, b = right.child_by_field_name("left"), right.child_by_field_name("right")
        if p.text_of(unparen(a)) == s:
            return unparen(b)
        if p.text_of(unparen(b)) == s:
            return unparen(a)
    return None


def merge_lines(o: Online, mo: str, so: str, mn: str) -> list[str]:
    """Statements merging the pair (``mo``, ``so``) into (``o.m``, ``o.s``) (module doc); a
    side whose maximum is already the merged one keeps its sum unscaled (also when both are
    -INFINITY: no NaN from ``-inf - -inf``)."""
    m, s, e = o.m, o.s, o.exp
    return [f"const {o.ctype} {mn} = {o.max}({m}, {mo});",
            f"{s} = ({m} == {mn} ? {s} : {s} * {e}({m} - {mn})) + "
            f"({mo} == {mn} ? {so} : {so} * {e}({mo} - {mn}));",
            f"{m} = {mn};"]


def online_body(o: Online, v: str) -> list[str]:
    """The fused loop's body: the running maximum and the rescaled sum."""
    return [f"const {o.ctype} {v} = {o.value};",
            f"if ({v} > {o.m}) {{",
            f"    {o.s} = {o.s} * {o.exp}({o.m} - {v}) + 1.0f;",
            f"    {o.m} = {v};",
            f"}} else {{",
            f"    {o.s} += {o.exp}({v} - {o.m});",
            f"}}"]


def row_length(ctx: PassContext, m: "wpr._Match") -> Optional[int]:
    """The first loop's bound at the spec's sizes, None when it cannot be evaluated."""
    from cudalens.optimizer.index2d import NoMatch, spec_text
    from cudalens.optimizer.macros import file_macros

    head = for_header(m.loops[0].node, m.parsed)
    bound = less_than_bound(head, m.parsed) if head is not None else None
    if bound is None:
        return None
    try:
        text = spec_text(bound, m.parsed, ctx, file_macros(m.parsed))
        env: dict = {}
        for s in ctx.spec.sizes:
            env[s.name] = spec_expr.evaluate(s.expr, env)
        return int(spec_expr.evaluate(text, env))
    except (NoMatch, spec_expr.ExprError, TypeError, ValueError, ZeroDivisionError):
        return None


def _plan(ctx: PassContext) -> tuple[Optional[str], Optional["wpr._Match"]]:
    reason, m = wpr._plan(ctx)
    if reason is not None:
        return reason, None
    n = row_length(ctx, m)
    if n is not None and n < MIN_COLUMNS:
        return (f"rows of {n} columns (at the spec's sizes) are short: a warp per {m.index} "
                f"keeps its lanes busy, a block per {m.index} pays from {MIN_COLUMNS} "
                f"columns"), None
    return None, m


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel gives each thread a long row the pass can spread over a block."""
    return _plan(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """Per block size: online first where the loops allow it, then without; then the same in
    the grid-stride form where the body does not return after the guard."""
    reason, m = _plan(ctx)
    if reason is not None:
        return tuple({"block": b} for b in BLOCKS)
    onl = (True, False) if online_pair(m) is not None else (False,)
    plain = tuple({"block": b, "online": o} for o in onl for b in BLOCKS)
    if wpr._gridstride_blocker(m) is not None:
        return plain
    return plain + tuple({**d, "gridstride": True} for d in plain)


def _indent(lines: list[str], indent: str) -> str:
    return "".join(f"\n{indent}{l}" for l in lines)


def rewrite(ctx: PassContext, m: "wpr._Match", group: str, online: bool, gridstride: bool,
            taken: set[str]) -> tuple[str, Optional[Online]]:
    """The row kernel's source with one ``group`` (``"warp"`` or ``"block"``) per row.

    Raises:
        PassNotApplicable: ``online`` where the loops have no fusable pair, or ``gridstride``
            where the body returns after the guard.
    """
    p = m.parsed
    o = online_pair(m) if online else None
    if online and o is None:
        raise PassNotApplicable(f"{name} (online) on {ctx.kernel.name}: no max loop followed "
                                f"by a sum of expf(value - max) over the same columns")
    block = group == "block"
    lane, warp, off = fresh_name("lane", taken), fresh_name("warp", taken), \
        fresh_name("offset", taken)
    tid = "threadIdx.x" if block else lane
    step = "blockDim.x" if block else str(WARP)
    indent = line_indent(p.data, m.index_decl.start_byte)
    first = (f"blockIdx.x" if block else f"(blockIdx.x * blockDim.x + threadIdx.x) / {WARP}u")
    stride = "gridDim.x" if block else f"(gridDim.x * blockDim.x) / {WARP}u"
    ids = [f"const unsigned int {lane} = threadIdx.x % {WARP}u"] + \
        ([f"{warp} = threadIdx.x / {WARP}u"] if block else [])
    shared: list[str] = []
    what = f"one {group} per {m.index}" + (" (grid-stride)" if gridstride else "")
    note = (f"// {what}: thread t of the {group} takes columns t, t + {step}, ..."
            + (f"; max and sum of exponentials in one pass (online softmax)" if o else ""))
    edits: list[Edit] = []
    if gridstride:
        blocker = wpr._gridstride_blocker(m)
        if blocker is not None:
            raise PassNotApplicable(f"{name} (grid-stride) on {ctx.kernel.name}: {blocker}")
        type_node = m.index_decl.child_by_field_name("type")
        ctype = p.text_of(type_node) if type_node is not None else "int"
        header = (f"{note}\n{indent}@SHARED@{', '.join(ids)};\n{indent}"
                  f"for ({ctype} {m.index} = {first}; {m.index} < {p.text_of(m.bound)}; "
                  f"{m.index} += {stride})")
        if not m.exit_guard:
            consequence = m.guard.child_by_field_name("consequence")
            edits.append(Edit(m.index_decl.start_byte, consequence.start_byte, header + " "))
        else:
            last = m.work[-1].end_byte if m.work else m.guard.end_byte
            edits += [Edit(m.index_decl.start_byte, m.guard.end_byte, header + " {" + wpr._BEGIN),
                      Edit(last, last, wpr._END + f"\n{indent}}}")]
    else:
        edits += [Edit(m.index_decl.start_byte, m.index_decl.start_byte,
                       f"{note}\n{indent}@SHARED@"),
                  Edit(m.index_value.start_byte, m.index_value.end_byte, first),
                  Edit(m.index_decl.end_byte, m.index_decl.end_byte,
                       f"\n{indent}{', '.join(ids)};")]

    def combine(li: str, pairs: list[tuple[str, str]], pair: Optional[Online]) -> str:
        """Warp butterfly, then (block) the warps' slots through shared memory."""
        lines = [f"for (int {off} = {WARP // 2}; {off} > 0; {off} /= 2) {{"]
        if pair is not None:
            mo, so, mn = fresh_name("m_other", taken), fresh_name("s_other", taken), \
                fresh_name("m_new", taken)
            lines += [f"    const {pair.ctype} {mo} = __shfl_xor_sync(0xffffffffu, {pair.m}, "
                      f"{off});",
                      f"    const {pair.ctype} {so} = __shfl_xor_sync(0xffffffffu, {pair.s}, "
                      f"{off});"]
            lines += [f"    {x}" for x in merge_lines(pair, mo, so, mn)]
        for acc, kind in pairs:
            lines.append(f"    {wpr._combine(acc, kind, f'__shfl_xor_sync(0xffffffffu, {acc}, {off})')}")
        lines.append("}")
        if len(lines) == 3:  # one statement: no braces
            lines = [f"{lines[0][:-2]}", lines[1]]
        if block:
            names = ([pair.m, pair.s] if pair else []) + [a for a, _ in pairs]
            slots = {}
            for acc in names:
                slots[acc] = fresh_name(f"{acc}_warps", taken)
                shared.append(f"__shared__ {_decl_type(m, acc) or 'float'} {slots[acc]}[{WARP}];")
            stores = [f"{slots[a]}[{warp}] = {a};" for a in names]
            lines.append(f"if ({lane} == 0) " + (stores[0] if len(stores) == 1 else
                                                 "{ " + " ".join(stores) + " }"))
            lines.append("__syncthreads();")
            lines += [f"{a} = {slots[a]}[0];" for a in names]
            w = fresh_name("w", taken)
            head = f"for (unsigned int {w} = 1; {w} < blockDim.x / {WARP}u; ++{w})"
            body = [wpr._combine(acc, kind, f"{slots[acc]}[{w}]") for acc, kind in pairs]
            if pair is not None:
                body = merge_lines(pair, f"{slots[pair.m]}[{w}]", f"{slots[pair.s]}[{w}]",
                                   fresh_name("m_new", taken)) + body
            lines += [f"{head} {body[0]}"] if len(body) == 1 else \
                [f"{head} {{"] + [f"    {x}" for x in body] + ["}"]
            lines.append("__syncthreads();  // the slots are free again")
        return _indent(lines, li)

    for loop in m.loops:
        if o is not None and loop is o.first:
            start = p.data.rfind(b"\n", 0, loop.node.start_byte)
            edits.append(Edit(start, loop.node.end_byte, ""))  # fused into the second
            continue
        start = p.text_of(loop.start).strip()
        edits.append(Edit(loop.start.start_byte, loop.start.end_byte,
                          tid if start == "0" else f"({start}) + {tid}"))
        edits.append(Edit(loop.update.start_byte, loop.update.end_byte,
                          f"{loop.var} += {step}"))
        li = line_indent(p.data, loop.node.start_byte)
        pair = o if o is not None and loop is o.second else None
        if pair is not None:
            body = loop.node.child_by_field_name("body")
            v = fresh_name("v", taken)
            edits.append(Edit(body.start_byte, body.end_byte,
                              "{" + _indent(online_body(pair, v), li + "    ") + f"\n{li}}}"))
        accs = [(a, k) for a, k in loop.accumulators if pair is None]
        if accs or pair is not None:
            edits.append(Edit(loop.node.end_byte, loop.node.end_byte, combine(li, accs, pair)))
    who = "threadIdx.x" if block else lane
    for stmt in m.row_stores:
        edits.append(Edit(stmt.start_byte, stmt.start_byte, f"if ({who} == 0) "))
    source = wpr._reindent(apply_edits(p.data, edits))
    fill = "".join(f"{s}\n{indent}" for s in shared)
    return source.replace("@SHARED@", fill, 1), o


def apply(ctx: PassContext, block: int = 256, online: bool = False,
          gridstride: bool = False) -> PassResult:
    """The block-per-row kernel with ``block`` threads (module doc for ``online`` and
    ``gridstride``).

    Raises:
        PassNotApplicable: the precondition fails, or ``online``/``gridstride`` where the
            kernel does not allow it (the message says why).
        ValueError: ``block`` is not one of ``BLOCKS``.
    """
    if block not in BLOCKS:
        raise ValueError(f"block must be one of {BLOCKS}, found {block!r}")
    reason, m = _plan(ctx)
    if reason is not None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    p = m.parsed
    taken = identifiers(p.tree.root_node, p) | {ctx.kernel.name}
    source, o = rewrite(ctx, m, "block", online, gridstride, taken)
    launch = dataclasses.replace(ctx.launch, block=(str(block),), grid=(m.bound_spec,))
    accs = [a for l in m.loops for a, _ in l.accumulators]
    explanation = (f"one block of {block} threads per {m.index} instead of one thread: "
                   f"consecutive threads read consecutive elements of the {m.index} (coalesced), "
                   f"each thread 1/{block} of the columns")
    if accs:
        explanation += (f"; {', '.join(dict.fromkeys(accs))} combined across each warp with "
                        f"__shfl_xor_sync, then across the block's warps through shared memory")
    if o is not None:
        explanation += (f"; {o.m} and {o.s} in one pass over the {m.index} (online softmax: "
                        f"the sum is rescaled when the running maximum grows; Milakov & "
                        f"Gimelshein 2018), so the {m.index} is read twice instead of three "
                        f"times")
    if m.row_stores:
        explanation += f"; thread 0 stores the per-{m.index} result"
    explanation += (" (sums are added in a different order: results may differ in the last "
                    "bits, within the tolerance the runner checks)")
    if gridstride:
        explanation += (f"; the blocks loop over the {m.index}s (grid-stride), so the kernel is "
                        f"also correct under any launch whose block is a multiple of 32 "
                        f"threads, the original one included")
    tag = "block-per-row" + ("+online" if o else "") + ("+gridstride" if gridstride else "")
    return PassResult(source=source, launch=launch, tags=(tag, f"block={block}"),
                      explanation=explanation)
