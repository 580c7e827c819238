"""Converting positions between the source model, compilers and the LSP client.

Three column units meet here:

* the source model (tree-sitter) counts **bytes of UTF-8** (``cudalens.source.model``);
* compilers count **characters** (code points; ``cudalens.check.report``, 1-based);
* LSP counts **code units of the negotiated position encoding**: UTF-16 unless the client
  offered ``utf-8`` or ``utf-32`` in ``general.positionEncodings`` (LSP 3.17,
  "PositionEncodingKind"). pygls picks the encoding; pass its name here.

Lines are zero-based everywhere in this module and split at ``\\n`` only, as tree-sitter
counts rows (a ``\\r`` before it stays part of the line's text, past any column we emit).
"""

from __future__ import annotations

from lsprotocol import types

from cudalens.source.model import Range as ModelRange
from cudalens.textfile import to_bytes

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def _units(text: str, encoding: str) -> int:
    if encoding == UTF8:  # an escaped byte (``textfile``) is one byte, as in the file
        try:
            return len(to_bytes(text))
        except UnicodeEncodeError:  # a lone surrogate the client sent
            return len(text.encode("utf-8", errors="surrogatepass"))
    if encoding == UTF32:
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _chars_in(text: str, byte_column: int) -> str:
    """The longest prefix of ``text`` whose bytes (``to_bytes``: a byte that is not UTF-8 is
    one character of one byte) fit in ``byte_column`` bytes: a column inside a character
    stops before it."""
    prefix = to_bytes(text)[:max(byte_column, 0)]
    try:
        return prefix.decode("utf-8")
    except UnicodeDecodeError:
        pass
    used = 0
    for i, ch in enumerate(text):
        used += len(to_bytes(ch))
        if used > len(prefix):
            return text[:i]
    return text


class LineIndex:
    """The lines of one text, for position conversions in ``encoding``.

    Raises:
        ValueError: ``encoding`` is not one of ``utf-8``, ``utf-16``, ``utf-32``.
    """

    def __init__(self, text: str, encoding: str = UTF16):
        encoding = str(getattr(encoding, "value", encoding))
        if encoding not in (UTF8, UTF16, UTF32):
            raise ValueError(f"expected a position encoding utf-8, utf-16 or utf-32, "
                             f"found {encoding!r}")
        self.encoding = encoding
        self.lines = text.split("\n")

    def line(self, number: int) -> str:
        """Line ``number`` (zero-based) without its ``\\n``; ``""`` past the end."""
        return self.lines[number] if 0 <= number < len(self.lines) else ""

    def from_byte(self, line: int, byte_column: int) -> types.Position:
        """The LSP position of a tree-sitter (line, UTF-8 byte column)."""
        text = self.line(line)
        if text.isascii():  # one byte, one code unit in every encoding
            return types.Position(line, min(max(byte_column, 0), len(text)))
        return types.Position(line, _units(_chars_in(text, byte_column), self.encoding))

    def from_char(self, line: int, char_column: int) -> types.Position:
        """The LSP position of a zero-based (line, character column)."""
        text = self.line(line)
        return types.Position(line, _units(text[:max(char_column, 0)], self.encoding))

    def to_char(self, position: types.Position) -> tuple[int, int]:
        """Zero-based (line, character column) of an LSP position; columns past the end of
        the line, or inside a character's code units, clamp to the character's start/line end."""
        text = self.line(position.line)
        units = 0
        for i, ch in enumerate(text):
            step = _units(ch, self.encoding)
            if units + step > position.character:
                return position.line, i
            units += step
        return position.line, len(text)

    def to_byte(self, position: types.Position) -> tuple[int, int]:
        """Zero-based (line, UTF-8 byte column) of an LSP position."""
        line, char = self.to_char(position)
        return line, len(to_bytes(self.line(line)[:char]))

    def range(self, r: ModelRange) -> types.Range:
        """An LSP range from a source-model range (byte columns)."""
        return types.Range(self.from_byte(r.start.line, r.start.column),
                           self.from_byte(r.end.line, r.end.column))

    def line_range(self, line: int) -> types.Range:
        """Line ``line`` from its first to its last non-blank character (the whole line
        when it is blank)."""
        text = self.line(line).rstrip("\r")
        stripped = text.lstrip()
        start = len(text) - len(stripped) if stripped else 0
        end = len(text.rstrip()) if stripped else len(text)
        return types.Range(self.from_char(line, start), self.from_char(line, end))

    def token_range(self, line: int, char_column: int) -> types.Range:
        """From ``char_column`` to the end of the identifier or number there, or one character
        when the column holds punctuation; the line's end when it is past it."""
        text = self.line(line).rstrip("\r")
        start = min(max(char_column, 0), len(text))
        end = start
        while end < len(text) and (text[end].isalnum() or text[end] == "_"):
            end += 1
        if end == start and start < len(text):
            end = start + 1
        return types.Range(self.from_char(line, start), self.from_char(line, end))

    def end(self) -> types.Position:
        """The position just past the text's last character."""
        last = len(self.lines) - 1
        return self.from_char(last, len(self.lines[last]))


def contains(r: types.Range, p: types.Position) -> bool:
    """Whether ``p`` lies in ``r``, both ends included."""
    at = (p.line, p.character)
    return (r.start.line, r.start.character) <= at <= (r.end.line, r.end.character)


def overlaps(a: types.Range, b: types.Range) -> bool:
    """Whether the ranges share a position (ends included)."""
    return ((a.start.line, a.start.character) <= (b.end.line, b.end.character)
            and (b.start.line, b.start.character) <= (a.end.line, a.end.character))
