"""``for`` loop headers: the variable, its start, the condition, the update and the body."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from cudalens.kernel_model.syntax import Node, Parsed, unparen


@dataclass(frozen=True)
class ForHeader:
    """The parts of ``for (INIT; COND; UPDATE) BODY`` whose INIT declares (or, when allowed,
    assigns) one variable ``var``: ``start`` its initial value, ``cond`` the condition without
    parentheses, ``update`` and ``body`` as written (``body`` None when missing)."""

    var: str
    start: Node
    cond: Node
    update: Node
    body: Optional[Node]


def for_header(loop: Node, parsed: Parsed, assignment: bool = False) -> Optional[ForHeader]:
    """``loop``'s header as a ``ForHeader``, or None when it has no initializer, condition or
    update, or its initializer is not ``T var = start`` (or ``var = start`` with
    ``assignment``)."""
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
    elif assignment and init.type == "assignment_expression" and \
            init.child_by_field_name("operator").type == "=":
        var = parsed.text_of(unparen(init.child_by_field_name("left")))
        start = init.child_by_field_name("right")
    else:
        return None
    return ForHeader(var, start, unparen(cond), update, loop.child_by_field_name("body"))


def less_than_bound(header: ForHeader, parsed: Parsed) -> Optional[Node]:
    """``BOUND`` when the loop's condition is ``var < BOUND``, else None."""
    cond = header.cond
    if cond.type != "binary_expression" or cond.child_by_field_name("operator").type != "<" or \
            parsed.text_of(unparen(cond.child_by_field_name("left"))) != header.var:
        return None
    return cond.child_by_field_name("right")
