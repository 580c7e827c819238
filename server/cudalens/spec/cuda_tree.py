"""Small helpers over tree-sitter-cuda trees for spec inference (parsing, walking, literals).

Offsets are byte offsets into the UTF-8 encoded source, as tree-sitter and the kernel model
(``cudalens.source.model.Kernel``) report them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.source.model import Kernel
from cudalens.source.syntax import meaningful_children as named_children
from cudalens.source.syntax import new_parser, text_of

Node = tree_sitter.Node


@dataclass(frozen=True)
class Parsed:
    """A source text's UTF-8 bytes and its tree-sitter-cuda tree."""

    data: bytes
    tree: tree_sitter.Tree

    def text_of(self, node: Node) -> str:
        return text_of(self.data, node)


@functools.lru_cache(maxsize=32)
def parse(text: str) -> Parsed:
    """``text`` parsed with tree-sitter-cuda (cached by content)."""
    data = text.encode("utf-8")
    return Parsed(data=data, tree=new_parser().parse(data))


def walk(node: Node) -> Iterator[Node]:
    """Every node under ``node`` (itself included), depth first, in source order."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(reversed(cur.children))


def unparen(node: Node) -> Node:
    """``node`` without enclosing parentheses (and an ``if``'s condition clause)."""
    while node.type in ("parenthesized_expression", "condition_clause"):
        inner = named_children(node)
        if len(inner) != 1:
            return node
        node = inner[0]
    return node


def declared_name(node: Optional[Node], parsed: Parsed) -> Optional[str]:
    """The identifier a declarator declares, through pointer, array and reference declarators."""
    while node is not None and node.type != "identifier":
        node = node.child_by_field_name("declarator")
    return parsed.text_of(node) if node is not None else None


def kernel_body_node(parsed: Parsed, kernel: Kernel) -> tuple[Parsed, Node]:
    """The body's ``compound_statement``, from the whole-file tree; if error recovery in the
    whole file hid the definition, from a parse of the definition's own text."""
    node = parsed.tree.root_node.descendant_for_byte_range(kernel.body_start_byte,
                                                           kernel.body_end_byte)
    while node is not None:
        if node.type == "compound_statement" and node.start_byte == kernel.body_start_byte \
                and node.end_byte == kernel.body_end_byte:
            return parsed, node
        node = node.parent
    alone = parse(parsed.data[kernel.start_byte:kernel.end_byte].decode("utf-8"))
    start = kernel.body_start_byte - kernel.start_byte
    end = kernel.body_end_byte - kernel.start_byte
    node = alone.tree.root_node.descendant_for_byte_range(start, end)
    while node is not None and not (node.type == "compound_statement"
                                    and node.start_byte == start and node.end_byte == end):
        node = node.parent
    if node is None:
        raise LookupError(f"kernel {kernel.name}: no body found at bytes "
                          f"{kernel.body_start_byte}..{kernel.body_end_byte}")
    return alone, node


def operator(node: Node) -> str:
    """The operator token of a binary, unary, assignment or pointer expression (``+``, ``&``)."""
    op = node.child_by_field_name("operator")
    if op is not None:
        return op.type
    return next((c.type for c in node.children if not c.is_named), "")


def strip(node: Node) -> Node:
    """``node`` without parentheses and C-style casts."""
    while True:
        node = unparen(node)
        value = node.child_by_field_name("value") if node.type == "cast_expression" else None
        if value is None:
            return node
        node = value


def int_literal(text: str) -> Optional[int]:
    """The value of a C integer literal (``256``, ``0x100``, ``010``, ``1'000u``), else None."""
    t = text.replace("'", "").lower().rstrip("ul")
    try:
        if t.startswith("0x"):
            return int(t, 16)
        if len(t) > 1 and t.startswith("0") and t.isdigit():
            return int(t, 8)
        return int(t) if t.isdigit() else None
    except ValueError:
        return None
