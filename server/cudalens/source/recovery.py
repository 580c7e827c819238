"""Re-parsing kernels that tree-sitter's error recovery mangled.

When a file does not parse cleanly, one broken construct can swallow the kernels after it
(a missing ``}`` makes them part of the broken body; a missing ``)`` can turn the rest of the
file into one ERROR node) and a macro before a kernel can split its declaration. Each such
kernel is parsed again alone: from its declaration start (see ``prefix.declaration_start``)
to the declaration start of the next ``__global__`` keyword in the file, using the parser's
included ranges so that every position stays absolute in the original file. No kernel
definition can contain a second ``__global__`` keyword, so this window always holds the
whole definition and nothing of the next kernel.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Sequence

import tree_sitter

from .kernels import GLOBAL, definition_extent, global_token
from .prefix import declaration_start
from cudalens.kernel_model.syntax import LineIndex, captures, new_parser

#: Constructs that cannot stand in a function body; finding one in a kernel body means the
#: body swallowed code after a missing ``}``. Definitions with a return type are real
#: functions (a macro call like ``CUDA_KERNEL_LOOP(i, n) { ... }`` parses as a typeless one).
_FOREIGN_IN_BODY = """[
  (template_declaration)
  (linkage_specification)
  (namespace_definition)
  (function_definition type: (_))
] @foreign"""
_GLOBAL_QUERY = f'"{GLOBAL}" @keyword'


class Recovery:
    """Checks and re-parses kernel definitions in a source whose tree has errors.

    ``keywords`` are the byte offsets of every ``__global__`` token in the file, ascending.
    """

    def __init__(self, src: bytes, keywords: Sequence[int]) -> None:
        self._src = src
        self._keywords = list(keywords)
        self._starts: dict[int, int] = {}
        self._lines: LineIndex | None = None
        self._trees: list[tree_sitter.Tree] = []  # keep re-parsed trees alive with their nodes

    def _declaration_start(self, index: int) -> int:
        if index not in self._starts:
            scan_from = self._keywords[index - 1] if index > 0 else 0
            self._starts[index] = declaration_start(self._src, scan_from, self._keywords[index])
        return self._starts[index]

    def window(self, index: int) -> tuple[int, int]:
        """Byte span [start, end) re-parsed for the ``index``-th ``__global__`` keyword."""
        end = self._declaration_start(index + 1) if index + 1 < len(self._keywords) else len(self._src)
        return self._declaration_start(index), end

    def is_suspect(self, definition: tree_sitter.Node, index: int) -> bool:
        """Whether a kernel definition from the whole-file tree may have the wrong extent or shape.

        True when its extent contains ERROR or MISSING nodes, when its body contains another
        ``__global__`` keyword, or when its body contains a construct that cannot stand in a
        function body (template, namespace, linkage specification or a typed function
        definition outside a local class).
        """
        if definition_extent(definition).has_error:
            return True
        body = definition.child_by_field_name("body")
        if body is None:
            return True
        inside = bisect_right(self._keywords, body.end_byte) - bisect_left(self._keywords, body.start_byte)
        if inside > 0:
            return True
        return any(
            node.parent is None or node.parent.type != "field_declaration_list"
            for node in captures(_FOREIGN_IN_BODY, body, "foreign")
        )

    def reparse(self, index: int) -> tuple[tree_sitter.Node | None, tree_sitter.Node]:
        """The ``index``-th ``__global__`` keyword's window parsed alone.

        Returns the ``function_definition`` holding the keyword, or None when the window does
        not parse as one, and the root of the window's tree.
        """
        start, end = self.window(index)
        if self._lines is None:
            self._lines = LineIndex(self._src)
        parser = new_parser()
        parser.included_ranges = [
            tree_sitter.Range(self._lines.point(start), self._lines.point(end), start, end)
        ]
        tree = parser.parse(self._src)
        self._trees.append(tree)
        keyword_at = self._keywords[index]
        for token in captures(_GLOBAL_QUERY, tree.root_node, "keyword"):
            if token.start_byte != keyword_at:
                continue
            parent = token.parent
            if parent is not None and parent.type == "function_definition" and global_token(parent) == token:
                return parent, tree.root_node
            break
        return None, tree.root_node
