"""Kernels held from the last good parse while the user is in the middle of an edit.

Typing in a kernel body leaves the text briefly unparsable (``y[i] = a * x[i] + ``,
``int i = ((((``); tree-sitter's error recovery may then not see the ``__global__``
definition at all, and the kernel's lenses would vanish and come back on every keystroke.
So when the newest parse of a document has syntax errors (``SourceFile.error_ranges``) and
finds fewer of the kernels than the last good analysis did, those missing kernels are
*held*: shown from the last good snapshot, marked ``(editing: last parsed version)``, with
no Optimize/Apply/Reject/Show diff on them (there is no current text of them to act on), until
a parse finds them again or parses without errors.

"Last good": the newest snapshot that did not both have syntax errors and lose kernels
(``is_regression``); a file that never parses cleanly (unparsable macros) still has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from cudalens.lsp.documents import DocumentSnapshot, KernelView

EDITING = "(editing: last parsed version)"


@dataclass(frozen=True)
class Held:
    """Kernels of ``last_good`` missing from the current snapshot.

    kernels: the held views (positions are in ``last_good.text``).
    lines: each held kernel's name -> zero-based line of its definition in the current text
        (``current_line``).
    """

    last_good: DocumentSnapshot
    kernels: tuple[KernelView, ...]
    lines: dict[str, int]

    def find(self, name: str) -> Optional[KernelView]:
        for view in self.kernels:
            if name in (view.kernel.name, view.kernel.qualified_name):
                return view
        return None


def _names(snapshot: DocumentSnapshot) -> set[str]:
    return {v.name for v in snapshot.kernels}


def is_regression(last_good: Optional[DocumentSnapshot], current: DocumentSnapshot) -> bool:
    """Whether ``current`` has syntax errors and lacks a kernel ``last_good`` had."""
    if last_good is None or not current.source.error_ranges:
        return False
    return bool(_names(last_good) - _names(current))


def held(last_good: Optional[DocumentSnapshot], current: DocumentSnapshot) -> Optional[Held]:
    """The kernels to hold for ``current`` (None when ``current`` is not a regression)."""
    if last_good is None or not is_regression(last_good, current):
        return None
    have = _names(current)
    views = tuple(v for v in last_good.kernels if v.name not in have)
    lines = {v.name: current_line(last_good, current, v) for v in views}
    return Held(last_good=last_good, kernels=views, lines=lines)


def current_line(last_good: DocumentSnapshot, current: DocumentSnapshot, view: KernelView) -> int:
    """Where ``view``'s definition starts in ``current``: the line with the same text as its
    first line in ``last_good``, the one nearest to where it was; else the old line number,
    clamped to the current text's lines."""
    old = view.kernel.range.start.line
    first = last_good.index.line(old)
    lines = current.index.lines
    if first.strip():
        matches = [n for n, text in enumerate(lines) if text == first]
        if matches:
            return min(matches, key=lambda n: (abs(n - old), n))
    return max(0, min(old, len(lines) - 1))
