"""Where a kernel definition starts, found lexically from its ``__global__`` keyword.

Used only when tree-sitter's error recovery has mangled the tree around a kernel and the
definition is parsed again on its own: the re-parse must start at the definition's first
token (a ``template <...>`` header, ``extern "C"``, ``static``, ``__launch_bounds__(...)``
written before ``__global__``) and not at an unrelated macro or broken code before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(
    rb"""
      (?P<space>\s+)
    | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
    | (?P<directive>\#(?:\\\r?\n|[^\n])*)
    | (?P<string>"(?:\\.|[^"\\\n])*"?)
    | (?P<char>'(?:\\.|[^'\\\n])*'?)
    | (?P<word>[A-Za-z_]\w*)
    | (?P<number>\.?\d(?:[\w.]|[eEpP][+-])*)
    | (?P<punct>::|.)
    """,
    re.VERBOSE | re.DOTALL,
)

#: Words that may stand before ``__global__`` in a kernel definition.
DECLARATION_WORDS = frozenset(
    {
        b"static",
        b"inline",
        b"__inline__",
        b"__inline",
        b"__forceinline__",
        b"__noinline__",
        b"extern",
        b"void",
    }
)
#: Attribute keywords written as ``word(...)`` that may stand before ``__global__``.
ATTRIBUTE_WORDS = frozenset(
    {b"__launch_bounds__", b"__maxnreg__", b"__cluster_dims__", b"__attribute__", b"__declspec"}
)


@dataclass(frozen=True)
class _Token:
    kind: str
    text: bytes
    start: int


def _tokens(src: bytes, start: int, end: int) -> list[_Token]:
    """Tokens of ``src[start:end]`` without spaces and comments; ``start`` must be a token boundary."""
    found: list[_Token] = []
    for match in _TOKEN.finditer(src, start, end):
        kind = match.lastgroup or "punct"
        if kind in ("space", "comment"):
            continue
        found.append(_Token(kind, match.group(), match.start()))
    return found


def _matching_open(tokens: list[_Token], close_index: int, open_text: bytes, close_text: bytes) -> int:
    """Index of the token opening the bracket closed at ``close_index``; -1 when unbalanced."""
    depth = 0
    for i in range(close_index, -1, -1):
        text = tokens[i].text
        if text == close_text:
            depth += 1
        elif text == open_text:
            depth -= 1
            if depth == 0:
                return i
        elif tokens[i].kind == "directive" or text in (b";", b"{", b"}"):
            return -1
    return -1


def declaration_start(src: bytes, scan_from: int, keyword_at: int) -> int:
    """Byte offset where the kernel definition whose ``__global__`` is at ``keyword_at`` begins.

    ``scan_from`` must be a token boundary at or before ``keyword_at`` (the start of the file
    or the previous ``__global__`` keyword), so comments and strings are tokenized right.
    Walks back over ``template <...>`` headers, ``extern "C"``, storage and inline keywords,
    ``void`` and ``__launch_bounds__(...)``-style attributes; stops at anything else (a macro,
    a ``;``, a ``}``, a preprocessor line) and returns ``keyword_at`` when nothing qualifies.
    """
    tokens = _tokens(src, scan_from, keyword_at)
    start = keyword_at
    i = len(tokens) - 1
    while i >= 0:
        token = tokens[i]
        if token.kind == "word" and token.text in DECLARATION_WORDS:
            start, i = token.start, i - 1
        elif token.kind == "string" and token.text in (b'"C"', b'"C++"') and i > 0 and tokens[i - 1].text == b"extern":
            start, i = tokens[i - 1].start, i - 2
        elif token.text == b">":
            opening = _matching_open(tokens, i, b"<", b">")
            if opening <= 0 or tokens[opening - 1].text != b"template":
                break
            start, i = tokens[opening - 1].start, opening - 2
        elif token.text == b")":
            opening = _matching_open(tokens, i, b"(", b")")
            if opening <= 0 or tokens[opening - 1].text not in ATTRIBUTE_WORDS:
                break
            start, i = tokens[opening - 1].start, opening - 2
        else:
            break
    return start
