"""Reading a user's text file (a ``.cu`` source, a ``.spec`` file) as UTF-8, with errors that
say where the problem is rather than Python's own wording; and keeping its line endings when
a rewrite is written back."""

from __future__ import annotations

from pathlib import Path


class TextFileError(Exception):
    """The file cannot be read as UTF-8 text. ``line``: 1-based line of the problem, 0 when
    it is not about a line (missing, a directory, unreadable); the message says what was
    expected and what was found, without the path (the caller names it)."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line


def read_text_file(path: Path) -> str:
    """``path``'s contents decoded as UTF-8 (a leading byte-order mark dropped: ``has_bom``
    tells whether to write one back).

    Raises:
        TextFileError: the path is missing, a directory or special file, unreadable, or not
            UTF-8 (then with the line and column of the first bad byte).
    """
    if path.exists() and not path.is_file():
        raise TextFileError(0, "expected a text file, found a directory or special file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TextFileError(0, "no such file") from None
    except OSError as exc:
        raise TextFileError(0, f"cannot read the file ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")  # a leading byte-order mark is not part of the text
    except UnicodeDecodeError as exc:
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
