"""Integer constants of a source file that spec expressions may name.

``#define NAME VALUE`` lines whose value is an integer expression of literals and of
earlier constants (``#define TILE 32``, ``#define BLOCK_ROWS (TILE / 4)``, ``#define N 1u << 20``)
are evaluated with the spec expression language (C integer arithmetic, ``cudalens.spec.expr``);
integer suffixes (``u``, ``l``, ``ul``...) are dropped. A name defined twice keeps its first value,
as the preprocessor would refuse the second unless it is identical; a define in a branch the
preprocessor skips is left out: ``active_text`` decides ``#if``/``#elif``/``#ifdef`` as the
preprocessor does over the macros defined before them and the build's ``-D`` values
(``kernel_model.conditionals``); of a condition it cannot evaluate all branches stay and the
first definition holds, as ``unsure_defines`` says.
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

from cudalens.kernel_model.conditionals import DIRECTIVE, Branches, Unknown
from cudalens.spec.expr import ExprError, evaluate

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*(.*?)[ \t]*$",
                     re.MULTILINE)
_SUFFIX = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b")
_COMMENT = re.compile(r"//.*$|/\*.*?\*/")


def file_constants(source: str, extra: Optional[Mapping[str, int]] = None) -> dict[str, int]:
    """name -> value of each integer ``#define`` of ``source`` (see the module doc), after
    ``extra``'s. Never raises: a define that cannot be evaluated is left out."""
    found = dict(_file_constants(source, tuple(sorted((extra or {}).items()))))
    if not extra:
        return found
    out = {k: int(v) for k, v in extra.items()}
    for k, v in found.items():
        out.setdefault(k, v)
    return out


@functools.lru_cache(maxsize=16)
def _file_constants(source: str, extra: tuple[tuple[str, int], ...] = ()
                    ) -> tuple[tuple[str, int], ...]:
    values: dict[str, int] = {}
    for m in _DEFINE.finditer(_active(source, extra)[0]):
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


_DEFINE_OR_UNDEF = re.compile(r"^[ \t]*#[ \t]*(?P<kw>define|undef)[ \t]+(?P<name>[A-Za-z_]\w*)"
                              r"(?:\((?P<params>[^()]*)\))?(?P<body>.*)$")


def active_text(source: str, predefined: Optional[Mapping[str, int]] = None) -> str:
    """``source`` with the lines of the branches the preprocessor certainly skips blanked
    (line count kept): each ``#if``/``#elif``/``#ifdef``/``#ifndef``/``#else`` is decided by
    ``kernel_model.conditionals`` over the macros ``#define``d before it (``#if BLOCK == 256``
    with ``#define BLOCK 128`` above it skips its branch). A condition that cannot be
    evaluated (``conditionals.Unevaluable``: a function-like macro it cannot expand, a value
    that is no integer, ``__CUDA_ARCH__``) keeps all its branches, as if each were taken
    (``unsure_defines`` says which defines that leaves in). ``predefined`` (the build's
    ``-D`` values) counts as defined before the first line; so do ``#define`` lines that come
    first in ``source`` (``target.FileContext.headers`` puts the ``-D`` options there).
    PolyBench's ``#ifdef POLYBENCH_USE_SCALAR_LB / # define POLYBENCH_LOOP_BOUND(x,y) x /
    #else / # define POLYBENCH_LOOP_BOUND(x,y) y`` keeps the second definition."""
    return _active(source, tuple(sorted((predefined or {}).items())))[0]


def unsure_defines(source: str, predefined: Optional[Mapping[str, int]] = None
                   ) -> dict[str, str]:
    """name -> why, for each ``#define`` of ``source`` that ``active_text`` keeps although it
    stands in a branch whose condition cannot be evaluated (the first of each name, as
    ``file_constants`` takes it): ``TILE is defined under '#if F(1)' (line 2), which cudalens
    cannot evaluate: ...`` (lines of ``source``)."""
    return dict(_active(source, tuple(sorted((predefined or {}).items())))[1])


@functools.lru_cache(maxsize=16)
def _active(source: str, predefined: tuple[tuple[str, int], ...]
            ) -> tuple[str, tuple[tuple[str, str], ...]]:
    if "#" not in source:
        return source, ()
    lines = source.split("\n")
    macros: dict[str, tuple] = {name: (None, str(v)) for name, v in predefined}
    uncertain: dict[str, str] = {}  # name -> why its definition is not known
    unsure: dict[str, str] = {}
    branches = Branches()

    def lookup(name: str):
        if name in uncertain:
            return Unknown(uncertain[name])
        return macros.get(name)

    out: list[str] = []
    i = 0
    while i < len(lines):
        first, line = i, lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i]
        i += 1
        line = _COMMENT.sub(" ", line)
        count = i - first
        m = DIRECTIVE.match(line)
        if m:
            branches.directive(m.group("kw"), m.group("rest"), f"line {first + 1}", lookup)
            out += lines[first:i]
            continue
        skipping = branches.skipping
        d = _DEFINE_OR_UNDEF.match(line)
        if d and not skipping:
            name, why = d.group("name"), branches.unsure_reason()
            if why:
                uncertain[name] = f"{name} is defined {why}"
                if d.group("kw") == "define":
                    unsure.setdefault(name, uncertain[name])
            elif d.group("kw") == "define":
                uncertain.pop(name, None)
                params = None if d.group("params") is None else tuple(
                    p.strip() for p in d.group("params").split(",") if p.strip())
                macros[name] = (params, d.group("body").strip())
            else:
                uncertain.pop(name, None)
                macros.pop(name, None)
        out += [""] * count if skipping else lines[first:i]
    return "\n".join(out), tuple(unsure.items())


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
