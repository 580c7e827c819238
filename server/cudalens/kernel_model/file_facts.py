"""What the passes read from the whole file, found once per text: the file's ``#define``s,
declarations, function definitions and declarators, and the names it spells.

A pass looks at one kernel, but some of what it needs is anywhere in the file: the macros its
index arithmetic uses, ``const int TILE = 32;`` at namespace scope, the bodies of the device
functions it calls, every identifier (so a fresh name collides with none). Walking the whole
tree for each of those, in every pass, for every candidate text, made a plan cost the file's
size times the number of checks (a 3,000-kernel file took minutes). Here each whole-file scan
is made once per ``Parsed`` (one text's parse, ``syntax.parse``) by a tree-sitter query, and
what is derived from it is kept beside the parse (``Parsed.facts``), so it goes when the parse
does.

``SCANS`` counts the whole-file scans made, by kind (``"nodes"``, ``"identifiers"``): a test
can check that planning a kernel scans each distinct text a fixed number of times, however
many kernels the file holds.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Callable, TypeVar

from cudalens.kernel_model.syntax import Node, Parsed, captures_outside_tables, tables

T = TypeVar("T")

# Node types collected by the one query over the whole file; a type not listed here cannot be
# asked of ``file_nodes``.
FILE_NODE_TYPES = ("preproc_def", "preproc_function_def", "declaration", "function_definition",
                   "function_declarator")
_NODES_QUERY = "[" + " ".join(f"({t})" for t in FILE_NODE_TYPES) + "] @n"
_IDENTIFIER_QUERY = "(identifier) @n"
_WORD = re.compile(rb"(?<![\w.])[A-Za-z_]\w*")  # not the f of 1.5f, the e5 of 1e5

SCANS: Counter = Counter()


def fact(parsed: Parsed, name: str, compute: Callable[[Parsed], T]) -> T:
    """``compute(parsed)``, computed once per ``parsed`` and ``name`` and kept in
    ``parsed.facts``; callers must not change what it returns (copy it first)."""
    facts = parsed.facts
    if name not in facts:
        facts[name] = compute(parsed)
    return facts[name]


def _nodes_by_type(parsed: Parsed) -> dict[str, tuple[Node, ...]]:
    SCANS["nodes"] += 1
    found: dict[str, list[Node]] = {t: [] for t in FILE_NODE_TYPES}
    for n in captures_outside_tables(_NODES_QUERY, parsed.tree.root_node, "n", parsed.data):
        found[n.type].append(n)
    return {t: tuple(nodes) for t, nodes in found.items()}


def file_nodes(parsed: Parsed, *types: str) -> list[Node]:
    """Every node of ``types`` (each one of ``FILE_NODE_TYPES``) in the whole file, in source
    order (outer before inner), from one scan per text.

    Raises:
        ValueError: a type that is not one of ``FILE_NODE_TYPES``.
    """
    unknown = [t for t in types if t not in FILE_NODE_TYPES]
    if unknown:
        raise ValueError(f"file_nodes: expected node types among {', '.join(FILE_NODE_TYPES)}, "
                         f"found {', '.join(unknown)}")
    by_type = fact(parsed, "nodes", _nodes_by_type)
    if len(types) == 1:
        return list(by_type[types[0]])
    nodes = [n for t in types for n in by_type[t]]
    return sorted(nodes, key=lambda n: (n.start_byte, -n.end_byte))


def _identifiers(parsed: Parsed) -> frozenset[str]:
    SCANS["identifiers"] += 1
    data, root = parsed.data, parsed.tree.root_node
    names = {data[n.start_byte:n.end_byte].decode("utf-8", errors="replace")
             for n in captures_outside_tables(_IDENTIFIER_QUERY, root, "n", data)}
    for start, end in tables(root, data):  # names in a table: read from its text
        names.update(m.group().decode("ascii") for m in _WORD.finditer(data, start, end))
    return frozenset(names)


def file_identifiers(parsed: Parsed) -> frozenset[str]:
    """Every identifier spelled in the file (field names after ``.``/``->`` excluded), as
    ``syntax.identifiers(root)`` gives them, from one scan per text; in a table of constants
    (``syntax.tables``) every word of its text counts (also those in its comments and string
    literals: a superset, which is what choosing a fresh name needs)."""
    return fact(parsed, "identifiers", _identifiers)
