"""Integer constants of a source file that spec expressions may name.

``#define NAME VALUE`` lines whose value is an integer expression of literals and of
earlier constants (``#define TILE 32``, ``#define BLOCK_ROWS (TILE / 4)``, ``#define N 1u << 20``)
are evaluated with the spec expression language (C integer arithmetic, ``cudalens.spec.expr``);
integer suffixes (``u``, ``l``, ``ul``...) are dropped. A name defined twice keeps its first value,
as the preprocessor would refuse the second unless it is identical; a define in a branch the
preprocessor certainly skips (``active_text``: ``#ifdef BIG`` with no ``#define BIG``
before it, which the build's ``-D`` options give as ``#define`` lines first) is left out.
Function-like macros,
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
    for m in _DEFINE.finditer(active_text(source)):
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


_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(?P<kw>ifdef|ifndef|if|elif|else|endif|define|undef)\b"
                          r"[ \t]*(?P<name>[A-Za-z_]\w*)?", re.MULTILINE)


def active_text(source: str) -> str:
    """``source`` with the lines of the branches the preprocessor certainly skips blanked
    (line count kept): ``#ifdef NAME`` when no ``#define NAME`` comes before it, ``#ifndef
    NAME`` when one does, and the ``#else`` of either otherwise; ``#if`` and ``#elif``
    conditions are not evaluated, so all their branches stay (as if each were taken). The
    build's ``-D`` options count where they come first in ``source`` as ``#define`` lines
    (``target.FileContext.headers`` puts them there); otherwise a name they define looks
    undefined.
    PolyBench's ``#ifdef POLYBENCH_USE_SCALAR_LB / # define POLYBENCH_LOOP_BOUND(x,y) x /
    #else / # define POLYBENCH_LOOP_BOUND(x,y) y`` keeps the second definition."""
    if "#" not in source:
        return source
    lines = source.split("\n")
    defined: set[str] = set()
    # per open conditional: [its branch here taken (None: unknown), a branch certainly
    # taken before, a condition unknown before]
    stack: list[list] = []
    out = []
    for line in lines:
        m = _CONDITIONAL.match(line)
        kw = m.group("kw") if m else ""
        skipping = any(level[0] is False for level in stack)
        if kw in ("ifdef", "ifndef"):
            name = m.group("name")
            known = None if name is None or skipping else \
                (name in defined) == (kw == "ifdef")
            stack.append([known, known is True, known is None])
        elif kw == "if":
            stack.append([None, False, True])
        elif kw == "elif" and stack:
            level = stack[-1]
            level[0] = False if level[1] else None
            level[2] = level[2] or level[0] is None
        elif kw == "else" and stack:
            level = stack[-1]
            level[0] = False if level[1] else (None if level[2] else True)
        elif kw == "endif" and stack:
            stack.pop()
        elif kw == "define" and not skipping and m.group("name"):
            defined.add(m.group("name"))
        elif kw == "undef" and not skipping and m.group("name"):
            defined.discard(m.group("name"))
        skip_now = any(level[0] is False for level in stack)
        out.append("" if skip_now and kw in ("define", "undef", "") else line)
    return "\n".join(out)


@functools.lru_cache(maxsize=16)
def function_macros(source: str) -> dict[str, tuple[tuple[str, ...], str]]:
    """name -> (parameter names, replacement text) of each function-like ``#define`` of
    ``source`` on one line (``#define UMUL(a, b) ((a) * (b))``), the first of each name
    outside the branches the preprocessor certainly skips (``active_text``)."""
    out: dict[str, tuple[tuple[str, ...], str]] = {}
    for m in _FUNCTION_DEFINE.finditer(active_text(source)):
        params = tuple(p.strip() for p in m.group(2).split(",") if p.strip())
        text = _COMMENT.sub("", m.group(3)).strip()
        if text and all(re.fullmatch(r"[A-Za-z_]\w*", p) for p in params):
            out.setdefault(m.group(1), (params, text))
    return out


@functools.lru_cache(maxsize=16)
def object_macros(source: str) -> dict[str, str]:
    """name -> replacement text of each object-like ``#define`` of ``source`` whose text is
    no integer constant of ``file_constants`` (``#define BOUND PICK(N, m)``, PolyBench's
    ``#define _PB_NX POLYBENCH_LOOP_BOUND(NX, nx)``), the first of each name; comments
    dropped, empty texts left out, branches the preprocessor certainly skips too
    (``active_text``). For analysis that expands a guard's or a loop's bound."""
    constants = dict(_file_constants(source))
    out: dict[str, str] = {}
    for m in _DEFINE.finditer(active_text(source)):
        name, text = m.group(1), _COMMENT.sub("", m.group(2)).strip()
        if text and name not in constants:
            out.setdefault(name, text)
    return out
