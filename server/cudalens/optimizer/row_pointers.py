"""Row pointers folded into subscripts, so a pattern pass sees ``A[row * K + p]`` where the
kernel wrote ``const float* a_row = A + row * K;`` and ``a_row[p]``; and, in a loop of the
guarded statements, a local holding one load (``float a = A[row * K + p];``, of the
buffer's own element type, used once, never assigned) folded into its use.

Only the 2D kernels of ``cudalens.optimizer.index2d`` are handled: a declaration among the
guarded statements of a local pointer initialized from a pointer parameter (``P + E``,
``E + P`` or ``&P[E]``), never assigned again, is blanked out (its lines stay, so reasons
keep their line numbers), and every ``name[X]`` after it becomes ``P[E + X]``. ``*(p + k)``
or a bare use of the local is left alone (the passes then refuse the kernel as before).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

from cudalens.kernel_model.edits import Edit, apply_edits
from cudalens.kernel_model.syntax import named_children, unparen, walk
from cudalens.optimizer import index2d
from cudalens.optimizer.context import PassContext

_LOW = re.compile(r"[?:<>&|^,=]")


def _wrap(text: str) -> str:
    return f"({text})" if _LOW.search(text) else text


def _base(init, parsed, params: set[str]) -> Optional[tuple[str, str]]:
    """(parameter, offset text) of ``P + E``, ``E + P`` or ``&P[E]``, else None."""
    init = unparen(init)
    if init.type == "binary_expression" and init.child_by_field_name("operator").type == "+":
        left, right = init.child_by_field_name("left"), init.child_by_field_name("right")
        for p, e in ((left, right), (right, left)):
            if unparen(p).type == "identifier" and parsed.text_of(unparen(p)) in params:
                return parsed.text_of(unparen(p)), parsed.text_of(e)
    if init.type == "pointer_expression" and init.child_by_field_name("operator").type == "&":
        arg = unparen(init.child_by_field_name("argument"))
        if arg.type == "subscript_expression":
            base = arg.child_by_field_name("argument")
            index = arg.child_by_field_name("index") or arg.child_by_field_name("indices")
            if index is None:
                kids = [c for c in named_children(arg) if c is not base]
                index = kids[0] if len(kids) == 1 else None
            if base is not None and index is not None and base.type == "identifier" and \
                    parsed.text_of(base) in params:
                text = parsed.text_of(index).strip()
                if text.startswith("[") and text.endswith("]"):
                    text = text[1:-1]
                return parsed.text_of(base), text
    return None


def inline(ctx: PassContext) -> PassContext:
    """``ctx`` with its kernel's row pointers folded (module doc); ``ctx`` itself when there
    are none or the kernel is not a 2D kernel."""
    try:
        g = index2d.match(ctx)
    except index2d.NoMatch:
        return ctx
    parsed = g.parsed
    params = {p.name for p in ctx.kernel.parameters if p.is_pointer}
    found: dict[str, tuple[str, str]] = {}
    edits: list[Edit] = []
    for stmt in g.statements:
        if stmt.type != "declaration":
            continue
        decls = stmt.children_by_field_name("declarator")
        if len(decls) != 1 or decls[0].type != "init_declarator" or \
                decls[0].child_by_field_name("declarator").type != "pointer_declarator":
            continue
        target = decls[0].child_by_field_name("declarator").child_by_field_name("declarator")
        base = _base(decls[0].child_by_field_name("value"), parsed, params)
        if target is None or target.type != "identifier" or base is None:
            continue
        found[parsed.text_of(target)] = base
        text = parsed.text_of(stmt)
        edits.append(Edit(stmt.start_byte, stmt.end_byte, re.sub(r"[^\n]", " ", text).rstrip(" ")))
    loads = _loop_loads(g, parsed, params, ctx)
    for stmt, name, text in loads:
        edits.append(Edit(stmt.start_byte, stmt.end_byte,
                          re.sub(r"[^\n]", " ", parsed.text_of(stmt)).rstrip(" ")))
    if not found and not loads:
        return ctx
    folded = {name: (stmt, text) for stmt, name, text in loads}
    for stmt, name, text in loads:
        loop_body = stmt.parent
        for n in walk(loop_body):
            if n.type == "identifier" and parsed.text_of(n) == name and \
                    not (stmt.start_byte <= n.start_byte < stmt.end_byte):
                edits.append(Edit(n.start_byte, n.end_byte, text))
    blanked = {(e.start, e.end) for e in edits}
    for stmt in g.statements:
        if (stmt.start_byte, stmt.end_byte) in blanked:
            continue
        for n in walk(stmt):
            if any(s.start_byte <= n.start_byte < s.end_byte for s, _ in folded.values()):
                continue
            if n.type == "identifier" and parsed.text_of(n) in found:
                parent = n.parent
                if parent is None or parent.type != "subscript_expression" or \
                        parent.child_by_field_name("argument") != n:
                    return ctx  # assigned, dereferenced or passed on: not a plain row pointer
                index = parent.child_by_field_name("index") or \
                    parent.child_by_field_name("indices")
                if index is None:
                    kids = [c for c in named_children(parent) if c != n]
                    index = kids[0] if len(kids) == 1 else None
                if index is None:
                    return ctx
                text = parsed.text_of(index).strip()
                if text.startswith("[") and text.endswith("]"):
                    text = text[1:-1]
                p, offset = found[parsed.text_of(n)]
                edits.append(Edit(parent.start_byte, parent.end_byte,
                                  f"{p}[{_wrap(offset)} + {_wrap(text)}]"))
    text = apply_edits(parsed.data, edits)
    new = ctx.rewritten(text, ctx.launch, "row_pointers")
    return dataclasses.replace(new, applied=ctx.applied)


def _loop_loads(g, parsed, params: set[str], ctx: PassContext) -> list[tuple]:
    """(declaration, name, load text) of each ``T a = P[...];`` in the body of a loop among
    the guarded statements, with ``T`` the element type of ``P``, ``a`` used exactly once
    after it in that body and never assigned."""
    out = []
    for loop in g.statements:
        if loop.type != "for_statement":
            continue
        body = loop.child_by_field_name("body")
        if body is None or body.type != "compound_statement":
            continue
        for stmt in named_children(body):
            if stmt.type != "declaration":
                continue
            decls = stmt.children_by_field_name("declarator")
            if len(decls) != 1 or decls[0].type != "init_declarator":
                continue
            target = decls[0].child_by_field_name("declarator")
            value = unparen(decls[0].child_by_field_name("value"))
            if target.type != "identifier" or value.type != "subscript_expression":
                continue
            base = value.child_by_field_name("argument")
            if base is None or base.type != "identifier" or parsed.text_of(base) not in params:
                continue
            ctype = re.sub(r"\bconst\b", "", parsed.text_of(stmt.child_by_field_name("type")))
            if " ".join(ctype.split()) != " ".join(
                    ctx.kernel.parameter(parsed.text_of(base)).type.replace("const", "").split()):
                continue
            name = parsed.text_of(target)
            uses = [n for n in walk(body) if n.type == "identifier" and
                    parsed.text_of(n) == name and n.start_byte >= stmt.end_byte]
            assigned = any(u.parent is not None and u.parent.type in
                           ("assignment_expression", "update_expression", "pointer_expression")
                           for u in uses)
            if len(uses) == 1 and not assigned:
                out.append((stmt, name, parsed.text_of(value)))
    return out
