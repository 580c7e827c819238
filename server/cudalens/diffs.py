"""Line diffs of two texts: the one place cudalens compares sources (Python's ``difflib``).

``unified_diff`` is what the CLI prints and the editor shows for a candidate (and for the
launch sites an apply rewrites); ``changed_lines`` is what an editor edit is made of
(``lsp/line_edits.py``). Both compare whole lines, line endings included.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from cudalens.textfile import printable


@dataclass(frozen=True)
class LineChange:
    """Lines ``old_start`` up to (not including) ``old_end`` of the old text (0-based) are
    replaced by ``new_lines`` (each with its line ending); an insertion has
    ``old_start == old_end``, a deletion no ``new_lines``."""

    old_start: int
    old_end: int
    new_lines: tuple[str, ...]


def unified_diff(old: str, new: str, fromfile: str, tofile: str) -> str:
    """The unified diff (3 lines of context) from ``old`` to ``new``, headed ``--- fromfile``
    and ``+++ tofile``; "" when they are equal. A byte of a file that is not UTF-8 (escaped
    in its text: ``textfile``) is written ``\\xHH`` (``textfile.printable``), so the diff can
    be printed on any terminal and sent as JSON."""
    return printable("".join(difflib.unified_diff(old.splitlines(keepends=True),
                                        new.splitlines(keepends=True),
                                        fromfile=fromfile, tofile=tofile)))


def changed_lines(old: str, new: str) -> list[LineChange]:
    """The fewest whole-line replacements turning ``old`` into ``new``, in order, as
    ``difflib.SequenceMatcher`` finds them (no junk heuristic: every line counts)."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [LineChange(i1, i2, tuple(b[j1:j2]))
            for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
