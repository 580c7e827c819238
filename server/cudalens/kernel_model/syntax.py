"""The one syntax layer over tree-sitter-cuda: the language, parsers, ``Parsed`` (a text, its
UTF-8 bytes and its tree) made through one cache keyed by the text, and helpers over nodes.

Everything here works on the UTF-8 bytes of a source file, because tree-sitter reports
byte offsets and (row, byte column) points; ``Position.column`` is a byte column too.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_right
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterator, Optional, Sequence

import tree_sitter
import tree_sitter_cuda

from cudalens.kernel_model.text_diff import edit_between
from cudalens.source.model import Position, Range
from cudalens.textfile import from_bytes, to_bytes

Node = tree_sitter.Node

_WHITESPACE = re.compile(r"\s+")


@lru_cache(maxsize=1)
def cuda_language() -> tree_sitter.Language:
    """The tree-sitter-cuda language, loaded once per process."""
    return tree_sitter.Language(tree_sitter_cuda.language())


def new_parser() -> tree_sitter.Parser:
    """A fresh parser (parsers are not thread-safe, languages and queries are): for a parser
    with state of its own (incremental parses, included ranges). A whole text is parsed with
    ``parse``."""
    return tree_sitter.Parser(cuda_language())


_local = threading.local()  # ``parse``'s parser, one per thread: the server plans off its loop


def _thread_parser() -> tree_sitter.Parser:
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = new_parser()
    return parser


@lru_cache(maxsize=None)
def query(source: str) -> tree_sitter.Query:
    """A compiled query for ``source`` (tree-sitter query syntax), cached by its text."""
    return tree_sitter.Query(cuda_language(), source)


def captures(pattern: str, node: Node, name: str) -> list[Node]:
    """Nodes captured as ``@name`` by ``pattern`` in the subtree of ``node``, in source order."""
    found = tree_sitter.QueryCursor(query(pattern)).captures(node).get(name, [])
    return sorted(found, key=lambda n: (n.start_byte, -n.end_byte))


# An initializer list this long (bytes) or longer is a *table* when its text holds no ``#``,
# ``(`` or ``]``: then it holds only literals, names and braces (no call, cast, lambda,
# launch, declaration or preprocessor line can be written without one of them).
TABLE_BYTES = 1 << 16


def tables(node: Node, data: bytes) -> list[tuple[int, int]]:
    """The byte spans of the tables under ``node`` (``data`` the text's UTF-8 bytes): the
    initializer lists of at least ``TABLE_BYTES`` bytes without ``#``, ``(`` or ``]`` (an
    11 MB ``__constant__`` array of numbers is one), in source order. Only nodes at least that
    long are looked into, and never an initializer list, so this costs the file's large
    nodes, not its size."""
    found: list[tuple[int, int]] = []
    stack = [node]
    while stack:
        cur = stack.pop()
        for child in reversed(cur.children):
            start, end = child.start_byte, child.end_byte
            if end - start < TABLE_BYTES:
                continue
            if child.type == "initializer_list":
                if data.find(b"#", start, end) < 0 and data.find(b"(", start, end) < 0 and \
                        data.find(b"]", start, end) < 0:
                    found.append((start, end))
                continue
            stack.append(child)
    return sorted(found)


def captures_outside_tables(pattern: str, node: Node, name: str, data: bytes) -> list[Node]:
    """``captures(pattern, node, name)`` for a pattern that cannot match inside a table
    (``tables``: a call, a declaration, a keyword, a preprocessor line), without the query
    visiting the tables' nodes (a million numbers cost seconds, every time they are read)."""
    spans = tables(node, data)
    if not spans:
        return captures(pattern, node, name)
    q = query(pattern)
    seen: dict[tuple[int, int, int], Node] = {}
    bounds = [node.start_byte] + [b for span in spans for b in span] + [node.end_byte]
    for lo, hi in zip(bounds[::2], bounds[1::2]):  # the gaps between the tables
        if hi <= lo:
            continue
        cursor = tree_sitter.QueryCursor(q)
        cursor.set_byte_range(lo, hi)
        for n in cursor.captures(node).get(name, []):  # nodes that overlap the gap
            seen.setdefault((n.start_byte, n.end_byte, n.kind_id), n)
    return sorted(seen.values(), key=lambda n: (n.start_byte, -n.end_byte))


# -- Parsed and its cache -------------------------------------------------------------------


@dataclass(frozen=True)
class Parsed:
    """A source text with its tree-sitter-cuda tree. ``data`` is the UTF-8 encoding of
    ``text``. Made by ``parse`` (or ``remember``), never directly: the kernel models of the
    text (``kernel_model.model``) live in ``models`` and what is found by scanning the whole
    file (``kernel_model.file_facts``) in ``facts``, so they go when the parse does."""

    text: str
    data: bytes
    tree: tree_sitter.Tree
    models: dict = field(default_factory=dict, compare=False, repr=False)
    facts: dict = field(default_factory=dict, compare=False, repr=False)

    def text_of(self, node: Node) -> str:
        return text_of(self.data, node)

    def line_of(self, node: Node) -> int:
        """1-based line number of ``node``'s start, for messages."""
        return node.start_point[0] + 1


class _RecentParses:
    """The parses of the last ``size`` texts parsed or remembered, by text (least recently
    used dropped first). Thread-safe: spec inference runs on the server's loop, the passes
    and inference in the optimizer's worker threads."""

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


class ParseCache:
    """The one cache of parses, by text: the texts ``parse`` parsed (the last ``size``) and the
    trees given by ``remember``, kept apart (a language server gives one per version of a
    document, most of which are never asked for, so only the last ``remembered`` are kept and
    they do not push the parses out)."""

    def __init__(self, size: int, remembered: int) -> None:
        self.parsed = _RecentParses(size)
        self.remembered = _RecentParses(remembered)

    def get(self, text: str) -> Optional[Parsed]:
        return self.remembered.get(text) or self.parsed.get(text)

    def clear(self) -> None:
        self.parsed.clear()
        self.remembered.clear()


PARSES = ParseCache(size=64, remembered=4)


def parse(text: str) -> Parsed:
    """``text`` parsed with tree-sitter-cuda, once per text: from ``PARSES`` (the texts parsed
    before and the trees given to ``remember``), else parsed now and kept there."""
    hit = PARSES.get(text)
    if hit is None:
        data = to_bytes(text)
        hit = Parsed(text=text, data=data, tree=_thread_parser().parse(data))
        PARSES.parsed.put(text, hit)
    return hit


def parse_near(text: str, near: Parsed) -> Parsed:
    """``parse(text)`` for a text that differs from ``near``'s in one region (an optimizer
    candidate: a rewrite of one kernel): ``near``'s tree edited (``text_diff.edit_between``)
    and re-parsed incrementally, so tree-sitter reads again only around the change. Kept in
    ``PARSES`` like any parse. Where either tree has errors the text is parsed whole instead:
    error recovery may differ between an incremental and a full parse, and callers of
    ``parse`` expect what a full parse gives."""
    hit = PARSES.get(text)
    if hit is not None:
        return hit
    if near.tree.root_node.has_error:
        return parse(text)
    data = to_bytes(text)
    old = near.tree.copy()  # ``near``'s own tree stays as it is
    old.edit(**edit_between(near.data, data))
    tree = _thread_parser().parse(data, old)
    if tree.root_node.has_error:
        tree = _thread_parser().parse(data)
    hit = Parsed(text=text, data=data, tree=tree)
    PARSES.parsed.put(text, hit)
    return hit


def clear_parses() -> None:
    """Empties ``PARSES`` (for measuring the plain path, and in tests)."""
    PARSES.clear()


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
    data = to_bytes(text) if data is None else data
    root = tree.root_node
    if root.end_byte > len(data) or data[root.end_byte:].strip():
        raise ValueError(f"syntax.remember: expected a tree of the {len(data)}-byte text, "
                         f"found one spanning bytes {root.start_byte}..{root.end_byte}")
    parsed = Parsed(text=text, data=data, tree=tree)
    PARSES.remembered.put(text, parsed)
    return parsed


# -- nodes ----------------------------------------------------------------------------------


def text_of(src: bytes, node: Node) -> str:
    """The source text of ``node`` (decoded from the UTF-8 bytes it covers, bytes that are
    not UTF-8 escaped: ``textfile.from_bytes``)."""
    return from_bytes(src[node.start_byte : node.end_byte])


def short_text(parsed: Parsed, node: Node, limit: int = 60) -> str:
    """``node``'s text with each run of white space (``str.split``) folded to one space, for
    quoting in a reason or message: whole when it has at most ``limit`` characters (``limit``
    at least 4), else its first ``limit - 3`` characters and ``...``."""
    text = " ".join(parsed.text_of(node).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def squeeze(text: str) -> str:
    """``text`` with every run of whitespace replaced by one space, stripped."""
    return _WHITESPACE.sub(" ", text).strip()


def range_of(node: Node) -> Range:
    """The model ``Range`` of ``node`` (zero-based lines, byte columns)."""
    return span_range(node.start_point, node.end_point)


def span_range(start: tuple[int, int], end: tuple[int, int]) -> Range:
    """A ``Range`` from two tree-sitter points (row, byte column)."""
    return Range(Position(start[0], start[1]), Position(end[0], end[1]))


class LineIndex:
    """Maps byte offsets of a source to tree-sitter points (row, byte column)."""

    def __init__(self, src: bytes) -> None:
        self._starts: Sequence[int] = [0] + [m.end() for m in re.finditer(b"\n", src)]

    def point(self, offset: int) -> tuple[int, int]:
        row = bisect_right(self._starts, offset) - 1
        return row, offset - self._starts[row]


def named_children(node: Node) -> list[Node]:
    """Named children of ``node`` that are not comments (e.g. the arguments of a list)."""
    return [c for c in node.named_children if c.type != "comment"]


def ancestors(node: Node) -> Iterator[Node]:
    """The parent of ``node``, its parent, and so on up to the root."""
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def walk(node: Node) -> Iterator[Node]:
    """Every node under ``node`` (itself included), depth first, in source order."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(reversed(cur.children))


def first_error(node: Node) -> Optional[Node]:
    """The first ERROR or MISSING node under ``node``, or None."""
    if not node.has_error:
        return None
    return next((n for n in walk(node) if n.type == "ERROR" or n.is_missing), node)


def identifiers(node: Node, parsed: Parsed) -> set[str]:
    """Every identifier spelled under ``node`` (field names after ``.``/``->`` excluded)."""
    return {parsed.text_of(n) for n in walk(node) if n.type == "identifier"}


def written_target(node: Node) -> Optional[Node]:
    """What an assignment (``x = ``, ``a[i] += ``: its left side) or an increment or decrement
    (``x++``, ``--x``: its argument) writes, without parentheses; None for any other node."""
    if node.type == "assignment_expression":
        return unparen(node.child_by_field_name("left"))
    if node.type == "update_expression":
        return unparen(node.child_by_field_name("argument"))
    return None


def assigned_names(node: Node, parsed: Parsed) -> dict[str, int]:
    """Every identifier assigned (``x = ``, ``x += ``), incremented or decremented (``x++``,
    ``--x``) or address-taken (``&x``) under ``node``, parentheses around it allowed, -> the
    1-based line of its first such use, in source order."""
    found: dict[str, int] = {}
    for n in walk(node):
        target = written_target(n)
        if n.type == "pointer_expression" and n.child_by_field_name("operator").type == "&":
            target = unparen(n.child_by_field_name("argument"))
        if target is not None and target.type == "identifier":
            found.setdefault(parsed.text_of(target), parsed.line_of(n))
    return found


def unparen(node: Node) -> Node:
    """``node`` without enclosing parentheses (and an ``if``'s condition clause)."""
    while node.type in ("parenthesized_expression", "condition_clause"):
        inner = named_children(node)
        if len(inner) != 1:
            return node
        node = inner[0]
    return node


def strip(node: Node) -> Node:
    """``node`` without parentheses and C-style casts."""
    while True:
        node = unparen(node)
        value = node.child_by_field_name("value") if node.type == "cast_expression" else None
        if value is None:
            return node
        node = value


def operator(node: Node) -> str:
    """The operator token of a binary, unary, assignment or pointer expression (``+``, ``&``)."""
    op = node.child_by_field_name("operator")
    if op is not None:
        return op.type
    return next((c.type for c in node.children if not c.is_named), "")


def declared_name(node: Optional[Node], parsed: Parsed) -> Optional[str]:
    """The identifier a declarator declares, through pointer, array and reference declarators."""
    while node is not None and node.type != "identifier":
        node = node.child_by_field_name("declarator")
    return parsed.text_of(node) if node is not None else None


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
