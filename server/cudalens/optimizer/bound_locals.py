"""Integer locals computed from scalar parameters, folded into their uses, so a pattern pass
sees ``if (idx < B * T * C)`` where the kernel wrote ``int N = B * T * C;`` between the index
and the guard (llm.c's ``int total_threads = B * T * NH; if (idx < total_threads)``).

A local qualifies when it is declared in the run of declarations that opens the kernel's body,
with an integer type (``spec.dtypes.is_int_c_type``), initialized from integer literals, scalar
parameters and locals folded before it (``+ - * / % << >>``, parentheses, casts), and neither
it nor anything its value names is assigned, incremented or address-taken in the body, and no
other declaration in the body reuses its name. Its declaration is blanked out (its lines stay,
so reasons keep their line numbers) and every later use becomes the parenthesized value. The
passes that read a guard's bound (``elementwise``, ``hist_match``, ``column_reduce``,
``warp_per_row``/``block_per_row``) check and rewrite the folded text (``fold``).
"""

from __future__ import annotations

import dataclasses
import re

import tree_sitter

from cudalens.kernel_model.edits import Edit, apply_edits
from cudalens.kernel_model.model import UnreadableBody, readable_body
from cudalens.kernel_model.syntax import Parsed, assigned_names, named_children, unparen, walk
from cudalens.optimizer.context import PassContext
from cudalens.spec import dtypes

_OPERATORS = ("+", "-", "*", "/", "%", "<<", ">>")
_INT_LITERAL = re.compile(r"^(0[xX][0-9a-fA-F]+|\d+)[uUlL]*$")


def _integer(node: tree_sitter.Node, parsed: Parsed, scalars: set[str],
             folded: dict[str, str]) -> bool:
    """Whether ``node`` is an integer expression of literals, ``scalars`` and ``folded``
    names."""
    node = unparen(node)
    text = parsed.text_of(node)
    if node.type == "number_literal":
        return bool(_INT_LITERAL.match(text))
    if node.type == "identifier":
        return text in folded or text in scalars
    if node.type == "cast_expression":
        type_node = node.child_by_field_name("type")
        return type_node is not None and dtypes.is_int_c_type(parsed.text_of(type_node)) and \
            _integer(node.child_by_field_name("value"), parsed, scalars, folded)
    if node.type == "binary_expression":
        return node.child_by_field_name("operator").type in _OPERATORS and all(
            _integer(node.child_by_field_name(side), parsed, scalars, folded)
            for side in ("left", "right"))
    return False


def _wrap(text: str) -> str:
    """``text`` as one operand: parenthesized unless it is a name, a literal or one group."""
    return text if re.fullmatch(r"[\w.]+|\(.*\)", text) and _balanced(text) else f"({text})"


def _balanced(text: str) -> bool:
    """Whether ``text`` is one atom: a name, a literal, or one parenthesized group."""
    if not text.startswith("("):
        return True
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and i < len(text) - 1:
            return False
    return True


def _spelled(node: tree_sitter.Node, parsed: Parsed, folded: dict[str, str]) -> str:
    """``node``'s text as written (on one line), earlier folded locals substituted."""
    base = node.start_byte
    edits = [Edit(n.start_byte - base, n.end_byte - base, folded[parsed.text_of(n)])
             for n in walk(node) if n.type == "identifier" and parsed.text_of(n) in folded]
    return " ".join(apply_edits(parsed.data[node.start_byte:node.end_byte], edits).split())


def _declared(body: tree_sitter.Node, parsed: Parsed) -> dict[str, int]:
    """How many declarations in ``body`` name each identifier (parameters of loops included)."""
    counts: dict[str, int] = {}
    for n in walk(body):
        if n.type != "declaration":
            continue
        for d in n.children_by_field_name("declarator"):
            while d is not None and d.type != "identifier":
                d = d.child_by_field_name("declarator")
            if d is not None:
                name = parsed.text_of(d)
                counts[name] = counts.get(name, 0) + 1
    return counts


def foldable(ctx: PassContext) -> tuple[Parsed, tree_sitter.Node, dict[str, tuple]] | None:
    """(parsed, body, {name: (declaration, value text)}) of the kernel's foldable locals
    (module doc), or None when it has none."""
    try:
        parsed, body = readable_body(ctx)
    except UnreadableBody:
        return None
    types = {p.name: dtypes.spec_type_for_c(p.type) for p in ctx.kernel.parameters
             if not p.is_pointer and dtypes.is_int_c_type(p.type)}
    scalars = set(types)
    changed = set(assigned_names(body, parsed))
    declared = _declared(body, parsed)
    folded: dict[str, str] = {}
    found: dict[str, tuple] = {}
    for stmt in named_children(body):
        if stmt.type != "declaration":
            break
        type_node = stmt.child_by_field_name("type")
        if type_node is None or not dtypes.is_int_c_type(parsed.text_of(type_node)):
            continue
        ctype = " ".join(parsed.text_of(type_node).split())
        own = dtypes.spec_type_for_c(ctype)
        got = []
        for d in stmt.children_by_field_name("declarator"):
            name = d.child_by_field_name("declarator") if d.type == "init_declarator" else None
            value = d.child_by_field_name("value") if name is not None else None
            if name is None or value is None or name.type != "identifier":
                break
            word = parsed.text_of(name)
            if not _integer(value, parsed, scalars - changed, folded) or word in changed or \
                    declared.get(word, 0) != 1:
                break
            text = _wrap(_spelled(value, parsed, folded))
            names = {parsed.text_of(n) for n in walk(value) if n.type == "identifier"}
            if any(types.get(n, own) != own for n in names):
                text = f"(({dtypes.normalize_c_type(ctype)}){text})"  # the declared type's value
            got.append((word, text))
        else:
            for word, text in got:
                types[word] = own
                folded[word] = text
                found[word] = (stmt, folded[word])
    return (parsed, body, found) if found else None


def fold(ctx: PassContext) -> PassContext:
    """``ctx`` with its kernel's foldable locals folded into their uses (module doc); ``ctx``
    itself when there are none."""
    got = foldable(ctx)
    if got is None:
        return ctx
    parsed, body, found = got
    stmts = {(s.start_byte, s.end_byte): s for s, _ in found.values()}
    edits = [Edit(s.start_byte, s.end_byte, re.sub(r"[^\n]", " ", parsed.text_of(s)).rstrip(" "))
             for s in stmts.values()]
    for n in walk(body):
        if n.type == "identifier" and parsed.text_of(n) in found and \
                not any(a <= n.start_byte < b for a, b in stmts):
            edits.append(Edit(n.start_byte, n.end_byte, found[parsed.text_of(n)][1]))
    text = apply_edits(parsed.data, edits)
    new = ctx.rewritten(text, ctx.launch, "bound_locals")
    return dataclasses.replace(new, applied=ctx.applied)
