"""``cudalens.diffs``: the one line-diff module (unified diffs for the CLI and the editor, line
changes for workspace edits), and no other module of the server or the runner using difflib."""

from __future__ import annotations

import ast
from pathlib import Path

from cudalens.diffs import LineChange, changed_lines, unified_diff

ROOT = Path(__file__).resolve().parent.parent


def test_unified_diff_heads_with_the_names_and_keeps_line_endings():
    old = "a\r\nb\r\nc\r\n"
    new = "a\r\nB\r\nc\r\n"
    assert unified_diff(old, new, "a/k.cu", "b/k.cu") == (
        "--- a/k.cu\n+++ b/k.cu\n@@ -1,3 +1,3 @@\n a\r\n-b\r\n+B\r\n c\r\n")
    assert unified_diff(old, old, "a/k.cu", "b/k.cu") == ""


def test_changed_lines_are_the_fewest_replacements_insertions_and_deletions():
    old = "x\ny\nz\n"
    assert changed_lines(old, "x\nY\nz\n") == [LineChange(1, 2, ("Y\n",))]
    assert changed_lines(old, "x\ny\nnew\nz\n") == [LineChange(2, 2, ("new\n",))]
    assert changed_lines(old, "x\nz\n") == [LineChange(1, 2, ())]
    assert changed_lines(old, old) == []
    # no junk heuristic: a line repeated often (here 300 braces) still counts as a line
    many = "}\n" * 300
    assert changed_lines(many + "a\n", many + "b\n") == [LineChange(300, 301, ("b\n",))]


def test_only_the_diffs_module_uses_difflib():
    users = []
    for root in (ROOT / "server" / "cudalens", ROOT / "gpu_runner"):
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module] if isinstance(node, ast.ImportFrom) else [])
                if "difflib" in names:
                    users.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert users == ["server/cudalens/diffs.py:10"]
