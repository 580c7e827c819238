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
    """``path``'s contents decoded as UTF-8.

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
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise TextFileError(line, f"expected UTF-8 text, found byte 0x{data[exc.start]:02x} at "
                                  f"column {column}; save the file as UTF-8") from None


def same_line_endings(text: str, like: str) -> str:
    """``text`` with CRLF line endings where ``like`` (the file as read) uses them, so that an
    applied rewrite does not mix the generated lines' LF with the file's CRLF."""
    if "\r\n" not in like:
        return text
    return text.replace("\r\n", "\n").replace("\n", "\r\n")
