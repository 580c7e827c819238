"""Small helpers over tree-sitter-cuda trees for spec inference (parsing, walking, literals).

Offsets are byte offsets into the UTF-8 encoded source, as tree-sitter and the kernel model
(``cudalens.source.model.Kernel``) report them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
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


class _RecentParses:
    """The trees of the last ``size`` texts parsed or remembered, by text (least recently
    used dropped first). Thread-safe: spec inference runs on the server's loop and in the
    optimizer's worker threads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[str, Parsed] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> Optional[Parsed]:
        with self._lock:
            hit = self._entries.get(text)
            if hit is not None:
                self._entries.move_to_end(text)
            return hit

    def put(self, text: str, parsed: Parsed) -> None:
        with self._lock:
            self._entries[text] = parsed
            self._entries.move_to_end(text)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_RECENT = _RecentParses(32)
# trees given by ``remember``: a language server gives one per version of a document, most
# of which are never asked for, so only the last few are kept, apart from the parses
_REMEMBERED = _RecentParses(4)


def _clear() -> None:
    _RECENT.clear()
    _REMEMBERED.clear()


def parse(text: str) -> Parsed:
    """``text`` parsed with tree-sitter-cuda (cached by content, with the trees given to
    ``remember``). ``parse.cache_clear()`` empties the cache."""
    hit = _REMEMBERED.get(text) or _RECENT.get(text)
    if hit is None:
        data = text.encode("utf-8")
        hit = Parsed(data=data, tree=new_parser().parse(data))
        _RECENT.put(text, hit)
    return hit


parse.cache_clear = _clear  # type: ignore[attr-defined]  # as functools.lru_cache had


def remember(text: str, tree: tree_sitter.Tree, data: Optional[bytes] = None) -> Parsed:
    """Makes ``parse(text)`` answer ``tree`` (a tree of ``text`` parsed elsewhere, e.g. a
    document's incremental parse) instead of parsing the text again; returns that ``Parsed``.

    The caller must not edit ``tree`` afterwards (give a ``Tree.copy()`` of a tree that will
    be edited) and should give a tree without errors: a full parse would recover from errors
    the same way only by chance, and callers of ``parse`` expect what a full parse gives.
    ``data`` is ``text`` as UTF-8 when the caller has it.

    Raises:
        ValueError: the tree does not span ``text`` (it was parsed from other bytes).
    """
    data = text.encode("utf-8") if data is None else data
    root = tree.root_node
    if root.end_byte > len(data) or data[root.end_byte:].strip():
        raise ValueError(f"cuda_tree.remember: expected a tree of the {len(data)}-byte text, "
                         f"found one spanning bytes {root.start_byte}..{root.end_byte}")
    parsed = Parsed(data=data, tree=tree)
    _REMEMBERED.put(text, parsed)
    return parsed


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
