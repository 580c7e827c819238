"""Integer constants of a source file that spec expressions may name.

``#define NAME VALUE`` lines whose value is an integer expression of literals and of
earlier constants (``#define TILE 32``, ``#define BLOCK_ROWS (TILE / 4)``, ``#define N 1u << 20``)
are evaluated with the spec expression language (C integer arithmetic, ``cudalens.spec.expr``);
integer suffixes (``u``, ``l``, ``ul``...) are dropped. A name defined twice keeps its first value,
as the preprocessor would refuse the second unless it is identical. Function-like macros,
non-integer values and values naming unknown identifiers are skipped. ``extra`` values (the
build's ``-D`` options, later read from ``compile_commands.json``) come first and win over the
file's own, as ``-D`` does over an ``#ifndef`` default.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Optional

from cudalens.spec.expr import ExprError, evaluate

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*(.*?)[ \t]*$",
                     re.MULTILINE)
_SUFFIX = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b")
_COMMENT = re.compile(r"//.*$|/\*.*?\*/")


def file_constants(source: str, extra: Optional[Mapping[str, int]] = None) -> dict[str, int]:
    """name -> value of each integer ``#define`` of ``source`` (see the module doc), after
    ``extra``'s. Never raises: a define that cannot be evaluated is left out."""
    found = dict(_file_constants(source))
    if not extra:
        return found
    out = {k: int(v) for k, v in extra.items()}
    for k, v in found.items():
        out.setdefault(k, v)
    return out


@functools.lru_cache(maxsize=16)
def _file_constants(source: str) -> tuple[tuple[str, int], ...]:
    values: dict[str, int] = {}
    for m in _DEFINE.finditer(source):
        name, text = m.group(1), _COMMENT.sub("", m.group(2)).strip()
        if name in values or not text:
            continue
        try:
            v = evaluate(_SUFFIX.sub(r"\1", text), values)
        except ExprError:
            continue
        if isinstance(v, int) and not isinstance(v, bool):
            values[name] = v
    return tuple(values.items())


_FUNCTION_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(([^()]*)\)[ \t]*(.*?)[ \t]*$",
                              re.MULTILINE)


@functools.lru_cache(maxsize=16)
def function_macros(source: str) -> dict[str, tuple[tuple[str, ...], str]]:
    """name -> (parameter names, replacement text) of each function-like ``#define`` of
    ``source`` on one line (``#define UMUL(a, b) ((a) * (b))``), the first of each name."""
    out: dict[str, tuple[tuple[str, ...], str]] = {}
    for m in _FUNCTION_DEFINE.finditer(source):
        params = tuple(p.strip() for p in m.group(2).split(",") if p.strip())
        text = _COMMENT.sub("", m.group(3)).strip()
        if text and all(re.fullmatch(r"[A-Za-z_]\w*", p) for p in params):
            out.setdefault(m.group(1), (params, text))
    return out
