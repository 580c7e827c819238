"""A text change as LSP line edits (``diffs.changed_lines``), for the candidate's file and the
launch sites an apply rewrites. Apart from ``edits`` and ``launch_edits``, which both use it, so
that neither imports the other for it (docs/architecture.md, "No cycles")."""

from __future__ import annotations

from lsprotocol import types

from cudalens.diffs import changed_lines
from cudalens.lsp.positions import LineIndex


def text_edits(old: str, new: str, index: LineIndex) -> list[types.TextEdit]:
    """Minimal whole-line edits turning ``old`` into ``new`` (ranges in ``old``; ``index`` is
    ``old``'s, for the end of the text)."""
    count = len(old.splitlines(keepends=True))

    def pos(i: int) -> types.Position:
        return types.Position(i, 0) if i < count else index.end()

    return [types.TextEdit(range=types.Range(pos(c.old_start), pos(c.old_end)),
                           new_text="".join(c.new_lines))
            for c in changed_lines(old, new)]
