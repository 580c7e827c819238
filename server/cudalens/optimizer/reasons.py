"""Why a pass does not apply, with the source line the failing condition is about.

A pass's ``check(ctx)`` returns None or a reason string; the recognizers raise
``LocatedError`` subclasses carrying the line of the node that failed a condition, and the
passes turn them into a ``Reason``: a ``str`` (so every caller that shows or compares the
words keeps working) with a ``line`` attribute.
"""

from __future__ import annotations

from typing import Optional


class Reason(str):
    """A pass's reason for not applying: the words, and ``line``, the 1-based line of the
    file the failing condition is about (None when the reason concerns the kernel as a whole,
    its spec or its launch sites)."""

    line: Optional[int]

    def __new__(cls, text: str, line: Optional[int] = None) -> "Reason":
        obj = super().__new__(cls, text)
        obj.line = line
        return obj


class LocatedError(Exception):
    """A recognizer's "does not match": the message says why; ``line`` (1-based, or None) is
    the line of the node that failed the condition."""

    def __init__(self, message: str, line: Optional[int] = None) -> None:
        super().__init__(message)
        self.line = line


def reason_of(exc: Exception) -> Reason:
    """The ``Reason`` for a recognizer's exception (its message; its ``line`` when it has one)."""
    return Reason(str(exc), getattr(exc, "line", None))


def line_of(reason: Optional[str]) -> Optional[int]:
    """The line a pass's reason carries, None for a plain string or no reason."""
    return getattr(reason, "line", None)
