"""tree-sitter-cuda helpers for the passes: parsing, finding a kernel's nodes, text edits.

All offsets are byte offsets into the UTF-8 encoded source, as tree-sitter reports them and
as ``cudalens.source.model.Kernel`` stores them.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional

import tree_sitter
import tree_sitter_cuda

from cudalens.source.model import Kernel


_local = threading.local()  # a parser per thread: the language server plans off its loop


def _parser() -> tree_sitter.Parser:
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = tree_sitter.Parser(
            tree_sitter.Language(tree_sitter_cuda.language()))
    return parser


@functools.lru_cache(maxsize=64)
def _parse_bytes(data: bytes) -> tree_sitter.Tree:
    return _parser().parse(data)


@dataclass(frozen=True)
class Parsed:
    """A source text with its tree-sitter tree. ``data`` is the UTF-8 encoding of ``text``."""

    text: str
    data: bytes
    tree: tree_sitter.Tree

    def text_of(self, node: tree_sitter.Node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8")

    def line_of(self, node: tree_sitter.Node) -> int:
        """1-based line number of ``node``'s start, for messages."""
        return node.start_point[0] + 1


def parse(text: str) -> Parsed:
    """Parses ``text`` with tree-sitter-cuda (trees are cached by content)."""
    data = text.encode("utf-8")
    return Parsed(text=text, data=data, tree=_parse_bytes(data))


def walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """Every node under ``node`` (itself included), depth first, in source order."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(reversed(cur.children))


def named_children(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The named children of ``node`` without comments."""
    return [c for c in node.named_children if c.type != "comment"]


def unparen(node: tree_sitter.Node) -> tree_sitter.Node:
    """``node`` with any enclosing parentheses removed."""
    while node.type in ("parenthesized_expression", "condition_clause"):
        inner = named_children(node)
        if len(inner) != 1:
            return node
        node = inner[0]
    return node


@dataclass(frozen=True)
class ForHeader:
    """The parts of ``for (INIT; COND; UPDATE) BODY`` whose INIT declares (or, when allowed,
    assigns) one variable ``var``: ``start`` its initial value, ``cond`` the condition without
    parentheses, ``update`` and ``body`` as written (``body`` None when missing)."""

    var: str
    start: tree_sitter.Node
    cond: tree_sitter.Node
    update: tree_sitter.Node
    body: Optional[tree_sitter.Node]


def for_header(loop: tree_sitter.Node, parsed: Parsed,
               assignment: bool = False) -> Optional[ForHeader]:
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


def less_than_bound(header: ForHeader, parsed: Parsed) -> Optional[tree_sitter.Node]:
    """``BOUND`` when the loop's condition is ``var < BOUND``, else None."""
    cond = header.cond
    if cond.type != "binary_expression" or cond.child_by_field_name("operator").type != "<" or \
            parsed.text_of(unparen(cond.child_by_field_name("left"))) != header.var:
        return None
    return cond.child_by_field_name("right")


def kernel_definition(parsed: Parsed, kernel: Kernel) -> tree_sitter.Node:
    """The ``function_definition`` node of ``kernel``, found by its body's byte offsets.

    Raises:
        LookupError: no function definition in ``parsed`` has that body (the kernel model and
            the text disagree).
    """
    body = parsed.tree.root_node.descendant_for_byte_range(kernel.body_start_byte,
                                                           kernel.body_end_byte)
    node = body
    while node is not None:
        if node.type == "function_definition":
            b = node.child_by_field_name("body")
            if b is not None and b.start_byte == kernel.body_start_byte \
                    and b.end_byte == kernel.body_end_byte:
                return node
        node = node.parent
    raise LookupError(f"no function definition of kernel {kernel.name} with its body at bytes "
                      f"{kernel.body_start_byte}..{kernel.body_end_byte}")


def find_definition(parsed: Parsed, kernel: Kernel) -> Optional[tree_sitter.Node]:
    """``kernel_definition``, or None where the whole-file parse does not hold the kernel as
    one definition (parse errors around it)."""
    try:
        return kernel_definition(parsed, kernel)
    except LookupError:
        return None


def first_error(node: tree_sitter.Node) -> Optional[tree_sitter.Node]:
    """The first ERROR or MISSING node under ``node``, or None."""
    if not node.has_error:
        return None
    return next((n for n in walk(node) if n.type == "ERROR" or n.is_missing), node)


class UnreadableBody(ValueError):
    """The kernel's body cannot be analysed; the message says why, with the line."""


def readable_body(ctx) -> tuple[Parsed, tree_sitter.Node]:
    """The parsed file of ``ctx`` (a ``PassContext``) and its kernel's body, for passes that
    match a pattern in the body.

    Raises:
        UnreadableBody: the definition is not one node of the syntax tree, or its body holds
            a parse error (often a macro the grammar cannot read).
    """
    k = ctx.kernel
    parsed = parse(ctx.text)
    definition = find_definition(parsed, k)
    if definition is None:
        raise UnreadableBody(f"the definition of {k.name} is not one piece in the file's syntax "
                             f"tree (parse errors around it)")
    body = definition.child_by_field_name("body")
    bad = first_error(body)
    if bad is not None:
        raise UnreadableBody(f"tree-sitter cannot read the body of {k.name} at line "
                             f"{parsed.line_of(bad)} (often a macro); the pass needs the whole "
                             f"body")
    return parsed, body


def parameter_nodes(definition: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The ``parameter_declaration`` nodes of a function definition, in order."""
    declarator = definition.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        return []
    plist = declarator.child_by_field_name("parameters")
    return [c for c in plist.named_children if c.type == "parameter_declaration"]


def identifiers(node: tree_sitter.Node, parsed: Parsed) -> set[str]:
    """Every identifier spelled under ``node`` (field names after ``.``/``->`` excluded)."""
    return {parsed.text_of(n) for n in walk(node) if n.type == "identifier"}


@dataclass(frozen=True)
class Edit:
    """Replace bytes ``start:end`` of the source with ``text``."""

    start: int
    end: int
    text: str


def apply_edits(data: bytes, edits: Iterable[Edit]) -> str:
    """``data`` with non-overlapping ``edits`` applied, decoded as UTF-8.

    Raises:
        ValueError: two edits overlap.
    """
    out: list[bytes] = []
    pos = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        if e.start < pos:
            raise ValueError(f"overlapping edits at byte {e.start} (previous edit ends at {pos})")
        out.append(data[pos:e.start])
        out.append(e.text.encode("utf-8"))
        pos = e.end
    out.append(data[pos:])
    return b"".join(out).decode("utf-8")


def fresh_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base`` with a numeric suffix, that is not in ``taken``; adds it to ``taken``."""
    name, n = base, 1
    while name in taken:
        name = f"{base}{n}"
        n += 1
    taken.add(name)
    return name


def line_indent(data: bytes, byte: int) -> str:
    """The leading whitespace of the line holding ``byte``."""
    start = data.rfind(b"\n", 0, byte) + 1
    end = start
    while end < len(data) and data[end:end + 1] in (b" ", b"\t"):
        end += 1
    return data[start:end].decode("utf-8")
