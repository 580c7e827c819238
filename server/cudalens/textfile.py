"""Reading a user's text file (a ``.cu`` source, a ``.spec`` file) as UTF-8, with errors that
say where the problem is rather than Python's own wording; and keeping its line endings when
a rewrite is written back.

A text file that is not UTF-8 (a Latin-1 ``// Größe`` comment, a Windows-1252 smart quote) is
read all the same: each byte that is not part of a UTF-8 sequence becomes the lone surrogate
U+DC80+byte (Python's ``surrogateescape`` error handler, PEP 383), so the text holds one
character per such byte, ``to_bytes`` gives the file's bytes back exactly, and every byte
offset (tree-sitter's) and line is the file's own. Every conversion of a source text to bytes
or back goes through ``to_bytes`` / ``from_bytes``; ``printable`` is for showing such a text
on a terminal or in JSON, where a lone surrogate cannot be encoded. A file with control bytes
no source text has (NUL, ...) is refused: it is not text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

ERRORS = "surrogateescape"
"""The error handler with which source texts are encoded and decoded (see the module's
docstring)."""


def to_bytes(text: str) -> bytes:
    """``text`` (a file's text as ``read_text_file`` gives it, or a rewrite of it) as the bytes
    to parse or write: UTF-8, with each escaped byte (U+DC80..U+DCFF) given back as itself."""
    return text.encode("utf-8", ERRORS)


def from_bytes(data: bytes) -> str:
    """``data`` (bytes of a source text, or a slice of them on character boundaries) as text,
    each byte that is not UTF-8 escaped (the inverse of ``to_bytes``)."""
    return data.decode("utf-8", ERRORS)


def printable(text: str) -> str:
    """``text`` with each escaped byte written ``\\xHH`` (a ``str`` any terminal encoding
    and JSON can hold); text without such bytes is returned unchanged."""
    if not _has_escapes(text):
        return text
    return to_bytes(text).decode("utf-8", "backslashreplace")


def wire_text(text: str) -> str:
    """``text`` as a source to send in a JSON body (the GPU runner's requests), which cannot
    hold an escaped byte: each one written as the C octal escape ``\\ooo`` (three digits, so
    no digit after it is taken in), which in a string or character literal is that same byte
    and in a comment is comment text; lines, and so the lines nvcc reports, are unchanged
    (columns after such a byte on its line shift by 3). Text without such bytes is returned
    unchanged."""
    if not _has_escapes(text):
        return text
    return _ESCAPED.sub(lambda m: "\\%03o" % (ord(m.group()) - 0xDC00), text)


def escaped_byte(text: str, comment: str = "") -> Optional[tuple[int, int, int]]:
    """``(line, column, byte)`` (1-based; the column counts characters, an escaped byte one)
    of the first byte of ``text`` that is not UTF-8, outside the part of each line from
    ``comment`` on when ``comment`` is given (``#`` for a spec file); None when there is
    none."""
    if not _has_escapes(text):
        return None
    for number, line in enumerate(text.split("\n"), 1):
        if comment and comment in line:
            line = line[:line.index(comment)]
        found = _ESCAPED.search(line)
        if found is not None:
            return number, found.start() + 1, ord(found.group()) - 0xDC00
    return None


def _has_escapes(text: str) -> bool:
    return _ESCAPED.search(text) is not None


_ESCAPED = re.compile("[\udc80-\udcff]")


def _control_byte(data: bytes) -> int:
    """The offset of the first byte below 0x20 other than tab, line feed, vertical tab, form
    feed and carriage return (no source text has one), or -1."""
    for i, b in enumerate(data):
        if b < 0x20 and b not in (9, 10, 11, 12, 13):
            return i
    return -1


class TextFileError(Exception):
    """The file cannot be read as UTF-8 text. ``line``: 1-based line of the problem, 0 when
    it is not about a line (missing, a directory, unreadable); the message says what was
    expected and what was found, without the path (the caller names it)."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line


def read_text_file(path: Path) -> str:
    """``path``'s contents decoded as UTF-8 (a leading byte-order mark dropped: ``has_bom``
    tells whether to write one back), bytes that are not UTF-8 escaped (``from_bytes``).

    Raises:
        TextFileError: the path is missing, a directory or special file, unreadable, or not
            UTF-8 and holding a control byte (a binary file; then with the line and column
            of the first byte that is not UTF-8).
    """
    if path.exists() and not path.is_file():
        raise TextFileError(0, "expected a text file, found a directory or special file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TextFileError(0, "no such file") from None
    except OSError as exc:
        raise TextFileError(0, f"cannot read the file ({exc.strerror or exc})") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a leading byte-order mark is not part of the text
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if _control_byte(data) < 0:
            return from_bytes(data)
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise TextFileError(line, f"expected UTF-8 text, found byte 0x{data[exc.start]:02x} at "
                                  f"column {column}; save the file as UTF-8") from None


def same_line_endings(text: str, like: str) -> str:
    """``text`` with CRLF line endings where every line of ``like`` (the file as read) ends
    in CRLF, so that an applied rewrite does not mix the generated lines' LF into a CRLF file.
    A file that mixes both is left as it is: its lines keep the endings they had."""
    if "\r\n" not in like or like.count("\r\n") != like.count("\n"):
        return text
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def has_bom(path: Path) -> bool:
    """Whether ``path`` starts with the UTF-8 byte-order mark (False when unreadable)."""
    try:
        with path.open("rb") as f:
            return f.read(3) == b"\xef\xbb\xbf"
    except OSError:
        return False
