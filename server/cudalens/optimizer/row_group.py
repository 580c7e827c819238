"""One warp or one thread block per row: what ``warp_per_row`` and ``block_per_row`` share.

``Match`` (with its ``Loop`` records) is a row kernel as ``warp_per_row``'s matcher
recognizes it (its module doc: a row index, a guard, loops over the row's columns with sums
and maxima, per-row stores); ``rewrite`` gives each row one warp (``"warp"``) or one block
(``"block"``), and with ``online`` fuses a max loop and the sum-of-exponentials loop after it
into one pass (``online_pair``; ``block_per_row``'s module doc: online softmax, Milakov &
Gimelshein 2018). ``gridstride_blocker``, ``combine_into`` and ``reindent`` (with its
``BEGIN``/``END`` markers) are the pieces both passes' own edits use. Apart from both passes
so that neither imports the other (docs/architecture.md, "No cycles").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.kernel_model.edits import Edit, apply_edits, fresh_name, line_indent
from cudalens.kernel_model.loops import for_header
from cudalens.kernel_model.syntax import Parsed, identifiers, named_children, unparen, walk
from cudalens.optimizer import minmax
from cudalens.optimizer.context import PassContext, PassNotApplicable

WARP = 32
EXPS = ("expf", "__expf", "exp")


@dataclass(frozen=True)
class Loop:
    """A loop over the row's columns: ``for (var = start; ...; update)`` and what it
    accumulates."""

    node: tree_sitter.Node
    var: str
    start: tree_sitter.Node
    update: tree_sitter.Node
    accumulators: tuple[tuple[str, str], ...]  # (name, "+" or a function), in first-use order


@dataclass(frozen=True)
class Match:
    """A one-thread-per-row kernel: the row index (its declaration and value), the guard and
    its bound (also as a spec expression, ``bound_spec``), the column loops, the per-row
    stores and the statements after the guard (``work``)."""

    parsed: Parsed
    index: str
    index_value: tree_sitter.Node
    index_decl: tree_sitter.Node
    bound_spec: str
    loops: tuple[Loop, ...]
    row_stores: tuple[tree_sitter.Node, ...] = ()
    guard: Optional[tree_sitter.Node] = None
    bound: Optional[tree_sitter.Node] = None  # the guard's bound, in the source
    exit_guard: bool = True  # ``if (row >= rows) return;`` (else ``if (row < rows) {...}``)
    work: tuple[tree_sitter.Node, ...] = ()


@dataclass(frozen=True)
class Online:
    """A max loop and the sum-of-exponentials loop after it, fused (module doc)."""

    first: Loop  # m = fmaxf(m, E), or if (E > m) m = E; (cudalens.optimizer.minmax)
    second: Loop  # s += expf(E - m)
    m: str
    s: str
    value: str  # E in the second loop's column variable
    exp: str
    max: str
    ctype: str


def _one_statement(loop: tree_sitter.Node, ifs: bool = False) -> Optional[tree_sitter.Node]:
    """The loop body's one expression (through braces); with ``ifs``, also its one ``if``
    statement."""
    body = loop.child_by_field_name("body")
    while body is not None and body.type == "compound_statement":
        inner = named_children(body)
        if len(inner) != 1:
            return None
        body = inner[0]
    if ifs and body is not None and body.type == "if_statement":
        return body
    if body is None or body.type != "expression_statement" or not named_children(body):
        return None
    return named_children(body)[0]


def _max_value(stmt: tree_sitter.Node, mx: str, p) -> Optional[tree_sitter.Node]:
    """``E`` of the max loop's statement ``mx = fmaxf(mx, E)`` (either order) or of a max
    written as a comparison (``if (E > mx) mx = E;``, ``mx = (E > mx) ? E : mx;``)."""
    cond = minmax.match(stmt, p)
    if cond is not None:
        ok = minmax.is_max(cond.kind) and p.text_of(unparen(cond.target)) == mx
        return cond.value if ok else None
    if stmt.type != "assignment_expression":
        return None
    right = unparen(stmt.child_by_field_name("right"))
    args = named_children(right.child_by_field_name("arguments")) \
        if right.type == "call_expression" else []
    others = [x for x in args if p.text_of(unparen(x)) != mx]
    return others[0] if len(args) == 2 and len(others) == 1 else None


def _norm(text: str) -> str:
    return " ".join(text.split()).replace("( ", "(").replace(" )", ")")


def _limit(head, p) -> "tuple[str, str] | None":
    """(``<`` or ``<=``, the bound's text) of a loop ``for (...; var < BOUND; ...)``."""
    cond = head.cond
    if cond.type != "binary_expression" or \
            p.text_of(unparen(cond.child_by_field_name("left"))) != head.var:
        return None
    op = cond.child_by_field_name("operator").type
    return (op, _norm(p.text_of(cond.child_by_field_name("right")))) if op in ("<", "<=") \
        else None


def decl_type(m: Match, var: str) -> Optional[str]:
    """The declared type of ``var`` among the statements after the guard, None when not
    declared there."""
    p = m.parsed
    for stmt in m.work:
        if stmt.type != "declaration":
            continue
        for d in stmt.children_by_field_name("declarator"):
            if d.type == "init_declarator" and p.text_of(d.child_by_field_name("declarator")) == var:
                t = stmt.child_by_field_name("type")
                return p.text_of(t) if t is not None else None
    return None


def online_pair(m: Match) -> Optional[Online]:
    """The first (max loop, sum-of-exponentials loop) pair the online form can fuse, or None."""
    p = m.parsed
    for a, b in zip(m.loops, m.loops[1:]):
        if len(a.accumulators) != 1 or len(b.accumulators) != 1 or \
                not minmax.is_max(a.accumulators[0][1]) or b.accumulators[0][1] != "+":
            continue
        mx, s = a.accumulators[0][0], b.accumulators[0][0]
        ha, hb = for_header(a.node, p), for_header(b.node, p)
        if _norm(p.text_of(ha.start)) != _norm(p.text_of(hb.start)) or \
                _limit(ha, p) is None or _limit(ha, p) != _limit(hb, p):
            continue
        between = [w for w in m.work if a.node.end_byte <= w.start_byte < b.node.start_byte]
        if any(w.type != "declaration" or mx in identifiers(w, p) for w in between):
            continue
        sa, sb = _one_statement(a.node, ifs=True), _one_statement(b.node)
        if sa is None or sb is None:
            continue
        found = _max_value(sa, mx, p)
        if found is None:
            continue
        value_a = p.text_of(found)
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
        ctype = decl_type(m, mx)
        if ctype is None or decl_type(m, s) is None:
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
    return [f"const {o.ctype} {mn} = {minmax.select(o.max, m, mo)};",
            f"{s} = ({m} == {mn} ? {s} : {s} * {e}({m} - {mn})) + "
            f"({mo} == {mn} ? {so} : {so} * {e}({mo} - {mn}));",
            f"{m} = {mn};"]


def online_body(o: Online, v: str) -> list[str]:
    """The fused loop's body: the running maximum and the rescaled sum."""
    return [f"const {o.ctype} {v} = {o.value};",
            f"if ({v} > {o.m}) {{",
            f"    {o.s} = {o.s} * {o.exp}({o.m} - {v}) + 1.0f;",
            f"    {o.m} = {v};",
            "} else {",
            f"    {o.s} += {o.exp}({v} - {o.m});",
            "}"]


def gridstride_blocker(m: Match) -> Optional[str]:
    """Why the rows cannot be looped over (a ``return`` in the work would leave the loop of
    rows, not the row), or None."""
    for stmt in m.work:
        for n in walk(stmt):
            if n.type == "return_statement":
                return (f"the body returns at line {m.parsed.line_of(n)}, which would end the "
                        f"loop over the {m.index}s")
    return None


def combine_into(acc: str, kind: str, other: str,
                 temp: Optional[tuple[str, str]] = None) -> str:
    """``acc`` combined with ``other``: ``+=`` for a sum, ``acc = kind(acc, other)`` for a
    function, the comparison of a conditional kind (``if (other > acc) acc = other;``), with
    ``other`` first stored in ``temp`` (type, name) when given (``minmax.combine_text``: a
    shuffle every lane must run, outside the comparison's branch)."""
    return minmax.combine_text(acc, kind, other, temp if minmax.is_conditional(kind) else None)


BEGIN, END = "/*@cudalens-indent-begin@*/", "/*@cudalens-indent-end@*/"


# what the block-per-row normal form (``warp_per_row._block_rows``) leaves on each line of a
# statement it removes, so that lines keep their numbers until the rewrite: ``reindent`` drops
# those lines
GONE = "/*@cudalens-gone@*/"


def _drop_gone(source: str) -> str:
    if GONE not in source:
        return source
    lines = [l for l in source.split("\n") if l.replace(GONE, "").strip() or GONE not in l]
    return "\n".join(lines).replace(GONE, "")


def reindent(source: str) -> str:
    """Indents the lines between the ``BEGIN`` and ``END`` markers by 4 spaces and drops the
    markers (a source without them is returned as it is), and the lines of statements the
    block-per-row normal form removed (``GONE``)."""
    source = _drop_gone(source)
    if BEGIN not in source:
        return source
    head, rest = source.split(BEGIN, 1)
    body, tail = rest.split(END, 1)
    lines = body.split("\n")
    body = "\n".join([lines[0]] + [("    " + l) if l.strip() else l for l in lines[1:]])
    return head + body + tail


def _indent(lines: list[str], indent: str) -> str:
    return "".join(f"\n{indent}{l}" for l in lines)


def rewrite(ctx: PassContext, m: Match, group: str, online: bool, gridstride: bool,
            taken: set[str], who: str) -> tuple[str, Optional[Online]]:
    """The row kernel's source with one ``group`` (``"warp"`` or ``"block"``) per row; ``who``
    (the pass's name) heads the reasons it raises.

    Raises:
        PassNotApplicable: ``online`` where the loops have no fusable pair, or ``gridstride``
            where the body returns after the guard.
    """
    p = m.parsed
    o = online_pair(m) if online else None
    if online and o is None:
        raise PassNotApplicable(f"{who} (online) on {ctx.kernel.name}: no max loop followed "
                                f"by a sum of expf(value - max) over the same columns")
    block = group == "block"
    lane, warp, off = fresh_name("lane", taken), fresh_name("warp", taken), \
        fresh_name("offset", taken)
    tid = "threadIdx.x" if block else lane
    step = "blockDim.x" if block else str(WARP)
    indent = line_indent(p.data, m.index_decl.start_byte)
    first = ("blockIdx.x" if block else f"(blockIdx.x * blockDim.x + threadIdx.x) / {WARP}u")
    stride = "gridDim.x" if block else f"(gridDim.x * blockDim.x) / {WARP}u"
    ids = [f"const unsigned int {lane} = threadIdx.x % {WARP}u"] + \
        ([f"{warp} = threadIdx.x / {WARP}u"] if block else [])
    shared: list[str] = []
    what = f"one {group} per {m.index}" + (" (grid-stride)" if gridstride else "")
    note = (f"// {what}: thread t of the {group} takes columns t, t + {step}, ..."
            + ("; max and sum of exponentials in one pass (online softmax)" if o else ""))
    edits: list[Edit] = []
    if gridstride:
        blocker = gridstride_blocker(m)
        if blocker is not None:
            raise PassNotApplicable(f"{who} (grid-stride) on {ctx.kernel.name}: {blocker}")
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
            edits += [Edit(m.index_decl.start_byte, m.guard.end_byte, header + " {" + BEGIN),
                      Edit(last, last, END + f"\n{indent}}}")]
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
            temp = (decl_type(m, acc) or "float", fresh_name(f"{acc}_other", taken)) \
                if minmax.is_conditional(kind) else None
            lines += [f"    {x}" for x in minmax.combine_lines(
                acc, kind, f"__shfl_xor_sync(0xffffffffu, {acc}, {off})", temp)]
        lines.append("}")
        if len(lines) == 3:  # one statement: no braces
            lines = [f"{lines[0][:-2]}", lines[1]]
        if block:
            names = ([pair.m, pair.s] if pair else []) + [a for a, _ in pairs]
            slots = {}
            for acc in names:
                slots[acc] = fresh_name(f"{acc}_warps", taken)
                shared.append(f"__shared__ {decl_type(m, acc) or 'float'} {slots[acc]}[{WARP}];")
            stores = [f"{slots[a]}[{warp}] = {a};" for a in names]
            lines.append(f"if ({lane} == 0) " + (stores[0] if len(stores) == 1 else
                                                 "{ " + " ".join(stores) + " }"))
            lines.append("__syncthreads();")
            lines += [f"{a} = {slots[a]}[0];" for a in names]
            w = fresh_name("w", taken)
            head = f"for (unsigned int {w} = 1; {w} < blockDim.x / {WARP}u; ++{w})"
            body = [combine_into(acc, kind, f"{slots[acc]}[{w}]") for acc, kind in pairs]
            if pair is not None:
                body = merge_lines(pair, f"{slots[pair.m]}[{w}]", f"{slots[pair.s]}[{w}]",
                                   fresh_name("m_new", taken)) + body
            lines += [f"{head} {body[0]}"] if len(body) == 1 else \
                [f"{head} {{"] + [f"    {x}" for x in body] + ["}"]
            lines.append("__syncthreads();  /* the slots are free again */")
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
    source = reindent(apply_edits(p.data, edits))
    fill = "".join(f"{s}\n{indent}" for s in shared)
    return source.replace("@SHARED@", fill, 1), o
