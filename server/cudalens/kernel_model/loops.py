"""``for`` loop headers: the variable, its start, the condition, the update and the body."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from cudalens.kernel_model.syntax import Node, Parsed, named_children, unparen, walk


@dataclass(frozen=True)
class ForHeader:
    """The parts of ``for (INIT; COND; UPDATE) BODY`` whose INIT declares (or, when allowed,
    assigns) one variable ``var``: ``start`` its initial value, ``cond`` the condition without
    parentheses, ``update`` and ``body`` as written (``body`` None when missing).
    ``declared`` is the earlier ``T var;`` declaration when INIT assigns a loop-only variable
    (``loose_declaration``), else None. ``ctype`` is the type written for ``var`` (in INIT
    or in ``declared``; None when INIT assigns a variable declared elsewhere)."""

    var: str
    start: Node
    cond: Node
    update: Node
    body: Optional[Node]
    declared: Optional[Node] = None
    ctype: Optional[str] = None


def for_header(loop: Node, parsed: Parsed, assignment: bool = False) -> Optional[ForHeader]:
    """``loop``'s header as a ``ForHeader``, or None when it has no initializer, condition or
    update, or its initializer is not ``T var = start`` (or ``var = start`` with
    ``assignment``, or without it when ``var`` is a loop-only variable declared before the
    loop: ``int c; ... for (c = 0; c < n; c++)``, see ``loose_declaration``)."""
    init = loop.child_by_field_name("initializer")
    cond = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or cond is None or update is None:
        return None
    if init.type == "declaration":
        decls = init.children_by_field_name("declarator")
        if len(decls) != 1 or decls[0].type != "init_declarator":
            return None
        var = parsed.text_of(decls[0].child_by_field_name("declarator"))
        start = decls[0].child_by_field_name("value")
        ctype = parsed.text_of(init.child_by_field_name("type"))
    elif init.type == "assignment_expression" and \
            init.child_by_field_name("operator").type == "=":
        var = parsed.text_of(unparen(init.child_by_field_name("left")))
        start = init.child_by_field_name("right")
        declared = loose_declaration(loop, var, parsed)
        if declared is None and not assignment:
            return None
        ctype = parsed.text_of(declared.child_by_field_name("type")) if declared else None
        return ForHeader(var, start, unparen(cond), update, loop.child_by_field_name("body"),
                         declared, ctype)
    else:
        return None
    return ForHeader(var, start, unparen(cond), update, loop.child_by_field_name("body"),
                     None, ctype)


def _mentions(node: Node, var: str, parsed: Parsed) -> int:
    return sum(1 for n in walk(node) if n.type == "identifier" and parsed.text_of(n) == var)


def loose_declaration(loop: Node, var: str, parsed: Parsed) -> Optional[Node]:
    """The declaration statement ``T var;`` (``T a, var;`` too: no initializer for ``var``)
    that makes ``var`` a loop-only variable of ``loop``, whose initializer assigns it: the
    declaration is an earlier statement of a block holding ``loop`` (its own or an enclosing
    one, as in ``int c; if (r < rows) { ... for (c = 0; ...) }``), and nothing else in
    those blocks mentions ``var`` (so its value is never read outside the loop, and declaring
    it in the header instead changes nothing). None when any of that does not hold, or
    ``var`` is not a plain identifier."""
    if not var.isidentifier():
        return None
    own = _mentions(loop, var, parsed)
    inner, block = loop, loop.parent
    while block is not None and block.type in ("compound_statement", "if_statement",
                                               "else_clause"):
        if block.type != "compound_statement":
            if _mentions(block, var, parsed) != own:
                return None
            inner, block = block, block.parent
            continue
        stmts = named_children(block)
        at = next((i for i, st in enumerate(stmts) if st.id == inner.id), None)
        if at is None or any(_mentions(st, var, parsed) for st in stmts[at + 1:]):
            return None
        for st in reversed(stmts[:at]):
            if st.type == "declaration":
                for d in st.children_by_field_name("declarator"):
                    if d.type == "identifier" and parsed.text_of(d) == var:
                        return st
                    if d.type == "init_declarator" and parsed.text_of(
                            d.child_by_field_name("declarator")) == var:
                        return None
            if _mentions(st, var, parsed):
                return None
        inner, block = block, block.parent
    return None


def less_than_bound(header: ForHeader, parsed: Parsed) -> Optional[Node]:
    """``BOUND`` when the loop's condition is ``var < BOUND``, else None."""
    cond = header.cond
    if cond.type != "binary_expression" or cond.child_by_field_name("operator").type != "<" or \
            parsed.text_of(unparen(cond.child_by_field_name("left"))) != header.var:
        return None
    return cond.child_by_field_name("right")
