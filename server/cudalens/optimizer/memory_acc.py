"""Accumulations into the output element in memory, moved into a register.

PolyBench/GPU and many textbook kernels accumulate straight into the global output::

    c[i * NJ + j] *= beta;                           // the initial value: the old one scaled
    for (k = 0; k < NK; k++)
        c[i * NJ + j] += alpha * a[i * NK + k] * b[k * NJ + j];
    mean[j] /= float_n;                              // after the loop: the final value

The row and matmul passes match a local accumulator instead. ``local`` rewrites each such
loop into that form, on the same lines: the value before the loop (``O = E0;``, ``O *= s;``,
``O = O * s;``, else the old value ``O``) is the initial value, each trip's ``O += E`` adds
into a register, and the value is stored once after the loop.

Two forms (``ordered``):

- ordered (``tiled_matmul``, ``regblock_matmul``, which keep the k order): ``T acc = INIT;``
  where the initial statement was (``INIT`` = ``E0``, ``O * s`` or ``O``: the old value read
  once), ``acc += E`` in the loop, the compound assignments right after the loop (``O /= n;``)
  applied to ``acc``, then ``O = acc;``. The same operations in the same order on values of
  the element type ``T``: bit for bit the original's.
- reassociated (the row passes, which add in another order anyway): ``T acc = 0;``, ``acc +=
  E`` in the loop, then one store combining the initial value with the sum (``O = acc;``,
  ``O = E0 + acc;``, ``O = O * s + acc;``, ``O += acc;``); statements after the loop stay on
  memory (per-row stores the passes know).

Aliasing: the original reads ``O`` on every trip, so a store through another pointer that
overlaps ``O`` would be seen there and not in the register. Within the loop the only mention
of ``O``'s buffer must be the accumulation (a loop that also reads it is left alone, with a
reason), so only another pointer parameter overlapping it could differ; as for every
structural pass the launch sites in the file are the evidence (``structural.plan`` refuses a
site passing one argument to two pointer parameters: ``cudalens.optimizer.aliasing``).

Layout (``own_lines``): ``local`` keeps every line where it was, so that the reasons and
lines the pass using it and the later passes report cite the user's lines; the declaration
it adds before a loop and the store after it therefore share a line with the loop
(``float y_acc = 0.0f; for (...)``, ``... } y[i] += y_acc;``). The candidate's source is
laid out once, after all passes ran on that line-kept text (``staged_search._candidate``):
``own_lines`` puts the statement following the register's declaration, and each later
statement of the same block that uses the register, on a line of its own, indented like
the declaration (the block's statements). The register is found by its name, with no marker in the text
for later passes to carry: a declaration of ``B_acc`` (``fresh_name``'s numbered forms
too) for a pointer parameter ``B`` that the original file does not spell, which only
``local`` writes. Only white space between two statements changes: the code is the same.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

import tree_sitter

from cudalens.kernel_model.edits import Edit, apply_edits, fresh_name, line_indent
from cudalens.kernel_model.file_facts import file_identifiers
from cudalens.kernel_model.loops import for_header
from cudalens.kernel_model.model import UnreadableBody, readable_body
from cudalens.kernel_model.syntax import (Parsed, declared_name, identifiers, named_children,
                                          parse, short_text, unparen, walk, written_target)
from cudalens.optimizer.context import PassContext
from cudalens.optimizer.reasons import Reason

SUM_TYPES = ("float", "double", "int", "unsigned", "unsigned int", "long", "long long",
             "unsigned long long", "size_t")
_ZERO = re.compile(r"^\(?\s*(0+|0*\.0*|0+\.0*)[fFuU]?\s*\)?$")
_POST_OPS = ("/=", "*=", "+=", "-=")
_ACC_NAME = re.compile(r"^(\w+)_acc\d*$")
# what may stand between two statements on one line: blanks and /* */ comments
_GAP = re.compile(rb"^(?:[ \t]|/\*(?:[^*]|\*(?!/))*\*/)*$")


def _norm(text: str) -> str:
    return "".join(text.split())


def _zero(ctype: str) -> str:
    return {"float": "0.0f", "double": "0.0"}.get(ctype, "0")


def _element_type(ptype: str) -> str:
    return " ".join(ptype.replace("*", " ").replace("const", " ").replace("__restrict__", " ")
                    .replace("volatile", " ").split())


def _assignment(stmt: tree_sitter.Node) -> Optional[tree_sitter.Node]:
    """The one assignment expression of an expression statement, else None."""
    if stmt.type != "expression_statement":
        return None
    kids = named_children(stmt)
    if len(kids) != 1 or kids[0].type != "assignment_expression":
        return None
    return kids[0]


def _mentions(node: tree_sitter.Node, p: Parsed, word: str) -> bool:
    return word in identifiers(node, p)


@dataclasses.dataclass(frozen=True)
class _Site:
    loop: tree_sitter.Node
    update: tree_sitter.Node  # the assignment ``O += E`` in the loop
    target: tree_sitter.Node  # its left side ``O``
    buffer: str
    ctype: str
    init: Optional[tree_sitter.Node]  # the statement before the loop setting O, or None
    init_kind: str  # "set", "scale" or "old"
    init_value: Optional[tree_sitter.Node]  # E0 or s
    post: tuple[tree_sitter.Node, ...]  # ``O op= e;`` right after the loop


def _sites(ctx: PassContext, p: Parsed, body: tree_sitter.Node
           ) -> tuple[list[_Site], Optional[Reason]]:
    """Each loop accumulating into an element of a pointer parameter (module doc), and the
    reason for the first one that cannot be moved into a register."""
    pointers = {q.name: q for q in ctx.kernel.parameters if q.is_pointer}
    sites: list[_Site] = []
    for block in walk(body):
        if block.type != "compound_statement":
            continue
        stmts = named_children(block)
        for i, loop in enumerate(stmts):
            if loop.type != "for_statement":
                continue
            head = for_header(loop, p)
            if head is None or head.body is None:
                continue
            found = None
            for n in walk(head.body):
                if n.type == "assignment_expression" and \
                        n.child_by_field_name("operator").type == "+=":
                    left = unparen(n.child_by_field_name("left"))
                    base = left.child_by_field_name("argument") \
                        if left.type == "subscript_expression" else None
                    owner = n.parent
                    while owner is not None and owner.type not in (
                            "for_statement", "while_statement", "do_statement"):
                        owner = owner.parent
                    if base is not None and base.type == "identifier" and \
                            p.text_of(base) in pointers and owner == loop:
                        found = (n, left, p.text_of(base))
                        break
            if found is None:
                continue
            update, target, buf = found
            line = p.line_of(update)
            shown = short_text(p, update, limit=70)
            ctype = _element_type(pointers[buf].type)
            index = named_children(target.child_by_field_name("indices"))
            changed = {p.text_of(t) for t in (written_target(a) for a in walk(loop))
                       if t is not None and t.type == "identifier"}
            if len(index) != 1 or identifiers(index[0], p) & (changed | {head.var}) or any(
                    m.type in ("call_expression", "assignment_expression", "update_expression")
                    for m in walk(index[0])):
                continue  # an element that moves with the loop: not one output's sum
            mentions = [m for m in walk(loop) if m.type == "identifier" and p.text_of(m) == buf]
            if len(mentions) != 1:
                other = next(m for m in mentions if not
                             target.start_byte <= m.start_byte < target.end_byte)
                return sites, Reason(
                    f"'{shown}' (line {line}) accumulates into {buf}, which the loop also "
                    f"uses at line {p.line_of(other)}: kept in a register the sum would "
                    f"differ from the original's reads of {buf}", line)
            if ctype not in SUM_TYPES:
                return sites, Reason(f"'{shown}' (line {line}) accumulates into {buf} of "
                                     f"type {ctype}, not a plain arithmetic type", line)
            key = _norm(p.text_of(target))
            init, kind, value = None, "old", None
            for prev in reversed(stmts[:i]):
                if not _mentions(prev, p, buf):
                    if any(t is not None and t.type == "identifier" and
                           p.text_of(t) in identifiers(index[0], p)
                           for t in (written_target(a) for a in walk(prev))):
                        break
                    continue
                a = _assignment(prev)
                if a is not None and _norm(p.text_of(unparen(a.child_by_field_name("left")))) \
                        == key:
                    op = a.child_by_field_name("operator").type
                    right = unparen(a.child_by_field_name("right"))
                    if op == "=" and not _mentions(right, p, buf):
                        init, kind, value = prev, "set", right
                    elif op == "*=" and not _mentions(right, p, buf):
                        init, kind, value = prev, "scale", right
                    elif op == "=" and right.type == "binary_expression" and \
                            right.child_by_field_name("operator").type == "*":
                        x, y = right.child_by_field_name("left"), right.child_by_field_name("right")
                        for u, v in ((x, y), (y, x)):
                            if _norm(p.text_of(unparen(u))) == key and not _mentions(v, p, buf):
                                init, kind, value = prev, "scale", v
                                break
                break
            if value is not None and identifiers(value, p) & changed:
                return sites, Reason(
                    f"the initial value of {buf} (line {p.line_of(init)}) uses "
                    f"{', '.join(sorted(identifiers(value, p) & changed))}, which the loop "
                    f"at line {p.line_of(loop)} changes", p.line_of(init))
            post = []
            for nxt in stmts[i + 1:]:
                a = _assignment(nxt)
                if a is None or a.child_by_field_name("operator").type not in _POST_OPS or \
                        _norm(p.text_of(unparen(a.child_by_field_name("left")))) != key or \
                        _mentions(a.child_by_field_name("right"), p, buf):
                    break
                post.append(nxt)
            sites.append(_Site(loop, update, target, buf, ctype, init, kind, value, tuple(post)))
    return sites, None


def _edits(p: Parsed, s: _Site, acc: str, ordered: bool) -> list[Edit]:
    o = p.text_of(s.target)
    zero = _zero(s.ctype)
    edits = [Edit(s.target.start_byte, s.target.end_byte, acc)]
    value = p.text_of(s.init_value) if s.init_value is not None else None
    if s.init_value is not None and s.init_value.type not in ("identifier", "number_literal"):
        value = f"({value})"
    if ordered:
        init = {"set": value, "scale": f"{o} * {value}", "old": o}[s.init_kind]
        if s.init is not None:
            edits.append(Edit(s.init.start_byte, s.init.end_byte, f"{s.ctype} {acc} = {init};"))
        else:
            edits.append(Edit(s.loop.start_byte, s.loop.start_byte,
                              f"{s.ctype} {acc} = {init}; "))
        for stmt in s.post:
            left = unparen(_assignment(stmt).child_by_field_name("left"))
            edits.append(Edit(left.start_byte, left.end_byte, acc))
        end = s.post[-1].end_byte if s.post else s.loop.end_byte
        edits.append(Edit(end, end, f" {o} = {acc};"))
        return edits
    if s.init_kind == "set" and _ZERO.match(p.text_of(s.init_value)):
        store = f"{o} = {acc};"
    else:
        store = {"set": f"{o} = {value} + {acc};", "scale": f"{o} = {o} * {value} + {acc};",
                 "old": f"{o} += {acc};"}[s.init_kind]
    if s.init is not None:
        edits.append(Edit(s.init.start_byte, s.init.end_byte, f"{s.ctype} {acc} = {zero};"))
    else:
        edits.append(Edit(s.loop.start_byte, s.loop.start_byte, f"{s.ctype} {acc} = {zero}; "))
    edits.append(Edit(s.loop.end_byte, s.loop.end_byte, f" {store}"))
    return edits


def local(ctx: PassContext, ordered: bool) -> tuple[PassContext, Optional[Reason]]:
    """``ctx`` with every accumulation into an output element kept in a register (module
    doc; ``ordered``: the form that keeps the original's order of operations), lines kept.

    Returns (the context, None); or (``ctx`` itself, the reason with its line) when a loop
    accumulates into memory in a way the register form could change (the buffer read
    elsewhere in the loop, a type that is not arithmetic, an initial value the loop
    changes); an element whose index moves with the loop is not an output's sum and is left
    to the pass. ``ctx`` itself and None when there is no such loop or
    the body cannot be read.
    """
    try:
        parsed, body = readable_body(ctx)
    except UnreadableBody:
        return ctx, None
    sites, reason = _sites(ctx, parsed, body)
    if reason is not None:
        return ctx, reason
    if not sites:
        return ctx, None
    taken = set(file_identifiers(parsed))
    edits: list[Edit] = []
    for s in sites:
        acc = fresh_name(f"{s.buffer}_acc", taken)
        taken.add(acc)
        edits += _edits(parsed, s, acc, ordered)
    try:
        text = apply_edits(parsed.data, edits)
    except ValueError:
        return ctx, Reason("the accumulations into memory overlap: cannot keep them in "
                           "registers")
    new = ctx.rewritten(text, ctx.launch, "memory_acc")
    return dataclasses.replace(new, applied=ctx.applied), None


def _starts_line(data: bytes, node: tree_sitter.Node) -> bool:
    """Whether only blanks stand before ``node`` on its line (a directive's node ends with
    its newline: the statement after it starts its line)."""
    start = data.rfind(b"\n", 0, node.start_byte) + 1
    return data[start:node.start_byte].strip() == b""


def _indent(data: bytes, node: tree_sitter.Node) -> str:
    """The indentation of ``node``: the white space before it when it starts its line, else
    one level (four spaces, or a tab where the line is indented with tabs) deeper than its
    line."""
    line = line_indent(data, node.start_byte)
    if _starts_line(data, node):
        return line
    return line + ("\t" if line.startswith("\t") else "    ")


def own_lines(ctx: PassContext, original: str) -> str:
    """``ctx.text`` (a candidate's text after all its passes) with ``local``'s register
    declarations and stores on lines of their own (module doc, Layout): in the kernel's
    body, after each declaration of a register ``B_acc`` (``B`` a pointer parameter, the
    name not spelled in ``original``, the text the passes started from), the next statement
    and every later statement of the same block that uses the register start a new line
    when they start on the line where the statement before them ends (with only blanks and
    ``/* */`` comments between them, which stay on the first line), indented like the
    declaration (one level deeper than its line where it does not start the line).

    Returns ``ctx.text`` itself when there is nothing to move or the body cannot be read.
    Raises nothing.
    """
    if "_acc" not in ctx.text:
        return ctx.text
    try:
        parsed, body = readable_body(ctx)
    except UnreadableBody:
        return ctx.text
    pointers = {q.name for q in ctx.kernel.parameters if q.is_pointer}
    before = file_identifiers(parse(original))
    data = parsed.data
    edits: dict[int, Edit] = {}
    for decl in walk(body):
        if decl.type != "declaration" or decl.parent is None or \
                decl.parent.type != "compound_statement":
            continue
        names = [declared_name(d, parsed) for d in decl.children_by_field_name("declarator")]
        match = _ACC_NAME.match(names[0] or "") if len(names) == 1 else None
        if match is None or match.group(1) not in pointers or names[0] in before:
            continue
        stmts = named_children(decl.parent)
        indent = _indent(data, decl)  # the block's statements, once on lines of their own
        at = next(i for i, s in enumerate(stmts) if s.start_byte == decl.start_byte)
        for j in range(at + 1, len(stmts)):
            prev, cur = stmts[j - 1], stmts[j]
            gap = data[prev.end_byte:cur.start_byte]
            if not _GAP.match(gap) or _starts_line(data, cur) or \
                    (j > at + 1 and names[0] not in identifiers(cur, parsed)):
                continue
            start = prev.end_byte + len(gap.rstrip())
            edits[start] = Edit(start, cur.start_byte, "\n" + indent)
    if not edits:
        return ctx.text
    return apply_edits(data, edits.values())
