"""The ``#define``s of a file, and expanding them in expressions the passes analyse.

Passes that recognize a pattern by its index arithmetic (``out[IDX(col, row, rows)]``) look
through object-like macros (``#define N 1024``) and function-like macros (``#define
IDX(r, c, ld) ((r) * (ld) + (c))``). Expansion here is only for analysis: the rewritten code
keeps the macro calls as written, so the compiler expands them exactly as before.

Expansion is textual, one macro at a time, with each argument substituted as written
(parenthesized) and the result re-parsed; ``#``, ``##`` and variadic macros are not expanded
(the analysis then sees an unknown call and the pass says so). A macro defined more than once
in the file is not expanded either: which definition holds at the use depends on ``#undef``
and ``#if`` lines that the passes do not evaluate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.kernel_model.file_facts import fact, file_nodes
from cudalens.kernel_model.syntax import Parsed, parse, walk

_WORD = re.compile(r"[A-Za-z_]\w*")
_INT = re.compile(r"^\(*\s*(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\s*\)*$")


@dataclass(frozen=True)
class Macro:
    """One ``#define``: ``params`` is None for an object-like macro, else the parameter names;
    ``body`` the replacement text (stripped); ``line`` 1-based."""

    name: str
    params: Optional[tuple[str, ...]]
    body: str
    line: int

    @property
    def expandable(self) -> bool:
        return "#" not in self.body and (self.params is None or "..." not in self.params)


def file_macros(parsed: Parsed) -> dict[str, Macro]:
    """Every macro defined exactly once in the file, by name (worked out once per text,
    ``kernel_model.file_facts``; the dict returned is the caller's own)."""
    return dict(fact(parsed, "macros", _file_macros))


def _file_macros(parsed: Parsed) -> dict[str, Macro]:
    found: dict[str, Macro] = {}
    twice: set[str] = set()
    for n in file_nodes(parsed, "preproc_def", "preproc_function_def"):
        name_node = n.child_by_field_name("name")
        if name_node is None:
            continue
        name = parsed.text_of(name_node)
        value = n.child_by_field_name("value")
        body = parsed.text_of(value).strip() if value is not None else ""
        params: Optional[tuple[str, ...]] = None
        if n.type == "preproc_function_def":
            plist = n.child_by_field_name("parameters")
            params = tuple(parsed.text_of(c) for c in plist.named_children) if plist else ()
        if name in found:
            twice.add(name)
        found[name] = Macro(name, params, body, parsed.line_of(n))
    return {k: v for k, v in found.items() if k not in twice}


def int_value(macro: Macro) -> Optional[int]:
    """The value of an object-like macro whose body is an integer literal (``256``, ``(32)``,
    ``0x100u``), else None."""
    if macro.params is not None:
        return None
    m = _INT.match(macro.body)
    if not m:
        return None
    return int(m.group(1), 0)


def substitute(macro: Macro, args: list[str]) -> str:
    """The replacement text of a function-like macro call with ``args`` (source texts), each
    argument parenthesized as the preprocessor's result would group it.

    Raises:
        ValueError: the number of arguments does not match the macro's parameters.
    """
    params = macro.params or ()
    if len(params) != len(args):
        raise ValueError(f"macro {macro.name} takes {len(params)} arguments, found {len(args)}")
    table = dict(zip(params, args))
    return _WORD.sub(lambda m: f"({table[m.group(0)]})" if m.group(0) in table else m.group(0),
                     macro.body)


def parse_expression(text: str) -> tuple[Parsed, tree_sitter.Node]:
    """Parses ``text`` as one C++ expression; returns the parse and the expression node.

    Raises:
        ValueError: ``text`` is not a single well-formed expression.
    """
    parsed = parse(f"void cudalens_expr__() {{ (void)({text}); }}\n")
    root = parsed.tree.root_node
    if root.has_error:
        raise ValueError(f"cannot parse '{text}' as an expression")
    for n in walk(root):
        if n.type == "cast_expression":
            value = n.child_by_field_name("value")
            if value is not None and value.type == "parenthesized_expression":
                inner = [c for c in value.named_children if c.type != "comment"]
                if len(inner) == 1:
                    return parsed, inner[0]
    raise ValueError(f"cannot parse '{text}' as an expression")


def expand_use(node: tree_sitter.Node, parsed: Parsed, macros: dict[str, Macro]
               ) -> Optional[tuple[Parsed, tree_sitter.Node]]:
    """The expression a macro use ``node`` (of ``parsed``) stands for, re-parsed, as (its
    parse, its node): an object-like macro whose body is no integer literal (``_PB_NX`` with
    ``#define _PB_NX POLYBENCH_LOOP_BOUND(NX, nx)``) or a function-like macro's call with its
    arguments substituted (``substitute``). None for anything else, a macro that is not
    ``expandable``, a wrong argument count, or a replacement that is no expression."""
    text: Optional[str] = None
    if node.type == "identifier":
        macro = macros.get(parsed.text_of(node))
        if macro is not None and macro.params is None and macro.expandable and \
                int_value(macro) is None and macro.body:
            text = macro.body
    elif node.type == "call_expression":
        fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        macro = macros.get(parsed.text_of(fn)) if fn is not None and \
            fn.type == "identifier" else None
        if macro is not None and macro.params is not None and macro.expandable and \
                args is not None:
            try:
                text = substitute(macro, [parsed.text_of(a) for a in args.named_children
                                          if a.type != "comment"])
            except ValueError:
                text = None
    if text is None:
        return None
    try:
        return parse_expression(text)
    except ValueError:
        return None
