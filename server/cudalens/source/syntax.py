"""Thin helpers over tree-sitter-cuda: the language, parsers, node text and ranges.

Everything here works on the UTF-8 bytes of a source file, because tree-sitter reports
byte offsets and (row, byte column) points; ``Position.column`` is a byte column too.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache
from typing import Iterator, Sequence

import tree_sitter
import tree_sitter_cuda

from .model import Position, Range

_WHITESPACE = re.compile(r"\s+")


@lru_cache(maxsize=1)
def cuda_language() -> tree_sitter.Language:
    """The tree-sitter-cuda language, loaded once per process."""
    return tree_sitter.Language(tree_sitter_cuda.language())


def new_parser() -> tree_sitter.Parser:
    """A fresh parser (parsers are not thread-safe, languages and queries are)."""
    return tree_sitter.Parser(cuda_language())


@lru_cache(maxsize=None)
def query(source: str) -> tree_sitter.Query:
    """A compiled query for ``source`` (tree-sitter query syntax), cached by its text."""
    return tree_sitter.Query(cuda_language(), source)


def captures(pattern: str, node: tree_sitter.Node, name: str) -> list[tree_sitter.Node]:
    """Nodes captured as ``@name`` by ``pattern`` in the subtree of ``node``, in source order."""
    found = tree_sitter.QueryCursor(query(pattern)).captures(node).get(name, [])
    return sorted(found, key=lambda n: (n.start_byte, -n.end_byte))


def text_of(src: bytes, node: tree_sitter.Node) -> str:
    """The source text of ``node`` (decoded from the UTF-8 bytes it covers)."""
    return src[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


def squeeze(text: str) -> str:
    """``text`` with every run of whitespace replaced by one space, stripped."""
    return _WHITESPACE.sub(" ", text).strip()


def range_of(node: tree_sitter.Node) -> Range:
    """The model ``Range`` of ``node`` (zero-based lines, byte columns)."""
    return span_range(node.start_point, node.end_point)


def span_range(start: tuple[int, int], end: tuple[int, int]) -> Range:
    """A ``Range`` from two tree-sitter points (row, byte column)."""
    return Range(Position(start[0], start[1]), Position(end[0], end[1]))


def meaningful_children(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    """Named children of ``node`` that are not comments (e.g. the arguments of a list)."""
    return [c for c in node.named_children if c.type != "comment"]


def ancestors(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """The parent of ``node``, its parent, and so on up to the root."""
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


class LineIndex:
    """Maps byte offsets of a source to tree-sitter points (row, byte column)."""

    def __init__(self, src: bytes) -> None:
        self._starts: Sequence[int] = [0] + [m.end() for m in re.finditer(b"\n", src)]

    def point(self, offset: int) -> tuple[int, int]:
        row = bisect_right(self._starts, offset) - 1
        return row, offset - self._starts[row]
