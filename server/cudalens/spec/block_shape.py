"""Literal block shapes written in a file: at launch sites and in ``__launch_bounds__``.

A launch's block argument counts as literal when it is an integer constant (``256``, a
``#define``d name, a ``const``/``constexpr`` integer), ``dim3(...)``/``{...}`` of such constants,
or the name of a ``dim3`` variable declared in the file with such constants (every declarator
of a declaration counts: ``dim3 grid(W / TILE, H / TILE), threads(TILE, ROWS);``). Lookups of names
are textual (regular expressions over the source), which suits a draft: a miss falls back to
the default block. Each kind of name is found in one pass over a text into a table, cached by
text (``named_ints``, ``dim3_declarations``): the specs of a file's kernels are inferred one
after another on the same text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Optional

from cudalens.source.model import Kernel, LaunchSite
from cudalens.spec.host_locals import locals_in, offset_of

_INT = re.compile(r"^(0[xX][0-9a-fA-F]+|\d+)[uUlL]*$")
_DIM3_CALL = re.compile(r"^(?:dim3\s*)?[({](?P<args>[^(){}]*)[)}]$")


def const_int(text: str, source: str) -> Optional[int]:
    """The value of an integer constant expression written as a literal or a named constant.

    A name is looked up as the first ``#define NAME VALUE`` of ``source``, else the first
    ``const``/``constexpr`` declaration ``... NAME = VALUE;`` (or ``NAME{VALUE}``)."""
    t = text.strip()
    while t.startswith("(") and t.endswith(")"):
        t = t[1:-1].strip()
    m = _INT.match(t)
    if m:
        return int(m.group(1), 0)
    if not _NAME.fullmatch(t):
        return None
    defines, consts = named_ints(source)
    return defines[t] if t in defines else consts.get(t)


def const_value(text: str, source: str) -> Optional[int]:
    """``const_int``, else the value of ``text`` as an arithmetic expression of literals and
    names (``BLOCK_SIZE / 4``, ``2 * WARPS * 32``, ``threads``) where a name is a ``#define``
    whose value is such an expression (``cudalens.spec.defines``), a ``const``/``constexpr``
    declaration, or a plain ``int NAME = VALUE;`` (``int threads = 128;``) when the file
    declares and assigns NAME nowhere else."""
    v = const_int(text, source)
    if v is not None:
        return v
    from cudalens.spec.defines import file_constants
    from cudalens.spec.expr import ExprError, evaluate

    _, consts = named_ints(source)
    env = {**_plain_ints(source), **consts, **file_constants(source)}
    try:
        v = evaluate(re.sub(r"\b(\d+)[uUlL]+\b", r"\1", text.strip()), env)
    except ExprError:
        return None
    return v if isinstance(v, int) else None


_PLAIN_INT = re.compile(r"\b(?:unsigned\s+)?(?:int|long|size_t|short)\s+([A-Za-z_]\w*)\s*"
                        r"(?:=\s*|\{\s*|\(\s*)(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\s*[})]?\s*;")


@functools.lru_cache(maxsize=8)
def _plain_ints(source: str) -> dict[str, int]:
    """``int NAME = LITERAL;`` declarations of names that appear in one such declaration and
    are never assigned again (``NAME =``, ``NAME +=``, ``++NAME``...) in ``source``."""
    found: dict[str, list[int]] = {}
    for m in _PLAIN_INT.finditer(source):
        found.setdefault(m.group(1), []).append(int(m.group(2), 0))
    out = {}
    for name, values in found.items():
        assigned = re.findall(rf"(?<![\w.]){re.escape(name)}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"
                              rf"|(?:\+\+|--)\s*{re.escape(name)}\b|\b{re.escape(name)}\s*"
                              rf"(?:\+\+|--)", source)
        if len(values) == 1 and len(assigned) <= 1:
            out[name] = values[0]
    return out


_NAME = re.compile(r"[A-Za-z_]\w*")
_NUMBER = r"(0[xX][0-9a-fA-F]+|\d+)[uUlL]*"
# One pattern per way of naming a constant, each with the name as a group: one pass over a
# text finds every name (``named_ints``). The first match of a pattern for a name is the
# first match of that pattern with the name written in (what the lookups searched for before
# the tables): at any position at most one name can match (the whole word after ``define``;
# the last word before the first ``=``/``{`` after ``const``), and no match holds the start
# of another one (a ``#``; a ``const`` before the same ``=``, naming the same name).
# ``\bconst`` is written ``const(?<!\wconst)``: a literal first lets the engine skip to each
# ``const`` instead of trying every position (7x faster on a 300 kB file, the same matches).
_DEFINE = re.compile(rf"#\s*define\s+([A-Za-z_]\w*)\s+\(?\s*{_NUMBER}\s*\)?\s*$", re.MULTILINE)
_CONST = re.compile(rf"const(?<!\wconst)(?:expr)?\b[^;=(){{}}]*\b([A-Za-z_]\w*)\s*"
                    rf"(?:=\s*|\{{\s*){_NUMBER}\s*\}}?\s*;")


@functools.lru_cache(maxsize=8)
def named_ints(source: str) -> tuple[dict[str, int], dict[str, int]]:
    """``(defines, consts)``: each name's value in its first ``#define NAME VALUE`` and in its
    first ``const``/``constexpr`` declaration with an integer literal, in ``source``.

    One pass per kind, cached by text (the last few): inferring the specs of every kernel of
    a file reads it once. The dictionaries are shared: do not modify them."""
    defines: dict[str, int] = {}
    for m in _DEFINE.finditer(source):
        defines.setdefault(m.group(1), int(m.group(2), 0))
    consts: dict[str, int] = {}
    for m in _CONST.finditer(source):
        consts.setdefault(m.group(1), int(m.group(2), 0))
    return defines, consts


_DIM3_HEAD = re.compile(r"dim3(?<!\wdim3)\s+(?=[A-Za-z_])")
_DECLARATOR = re.compile(r"\s*([A-Za-z_]\w*)\s*(?:=\s*(?:dim3\s*)?)?([({])?")
_CLOSE = {"(": ")", "{": "}"}


@functools.lru_cache(maxsize=8)
def dim3_declarations(source: str) -> dict[str, str]:
    """Each name's arguments in its first ``dim3 NAME(...)``/``dim3 NAME = {...}``/``dim3
    NAME = dim3(...)`` in ``source``, every declarator of one declaration counted (``dim3
    grid(W / TILE, H / TILE), threads(TILE, ROWS);``); arguments may hold parentheses
    (``(w + TILE - 1) / TILE``). One pass, cached by text; do not modify the result."""
    found: dict[str, str] = {}
    for name, args, _ in dim3_declaration_sites(source):
        found.setdefault(name, args)
    return found


def dim3_declared_before(name: str, source: str, offset: int) -> Optional[str]:
    """The arguments of the last ``dim3`` declaration of ``name`` starting before ``offset``
    (the one a launch at ``offset`` in the same function sees, when each host function
    declares its own ``grid``), else of the first one, else None."""
    sites = [(args, at) for n, args, at in dim3_declaration_sites(source) if n == name]
    before = [args for args, at in sites if at < offset]
    return before[-1] if before else (sites[0][0] if sites else None)


@functools.lru_cache(maxsize=8)
def dim3_declaration_sites(source: str) -> tuple[tuple[str, str, int], ...]:
    """Every ``dim3`` declarator with arguments in ``source`` as (name, arguments, offset of
    its declaration), in order (``dim3_declarations``' grammar)."""
    found: list[tuple[str, str, int]] = []
    for head in _DIM3_HEAD.finditer(source):
        at = head.end()
        while True:
            m = _DECLARATOR.match(source, at)
            if m is None:
                break
            at, args = m.end(), None
            if m.group(2) is not None:
                end = _balanced(source, at - 1)
                if end is None:
                    break
                args, at = source[at:end - 1], end
            rest = re.match(r"\s*([,;])", source[at:at + 200])
            if rest is None:  # dim3 g = (n + 255) / 256; is no list of dimensions
                break
            if args is not None:
                found.append((m.group(1), args, head.start()))
            if rest.group(1) == ";":
                break
            at += rest.end()
    return tuple(found)


def _balanced(text: str, start: int) -> Optional[int]:
    """The index after the bracket closing the one at ``start`` (no strings looked into),
    or None when it is not closed within 2000 characters."""
    depth = 0
    for i in range(start, min(len(text), start + 2000)):
        c = text[i]
        if c in "({":
            depth += 1
        elif c in ")}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def literal_block(text: str, source: str) -> Optional[tuple[int, ...]]:
    """The block shape ``text`` (a launch's second ``<<<...>>>`` argument) denotes, or None."""
    t = text.strip()
    v = const_value(t, source)
    if v is not None:
        return (v,)
    m = _DIM3_CALL.match(t)
    if m:
        return _dims(m.group("args"), source)
    if _NAME.fullmatch(t):
        args = dim3_declarations(source).get(t)
        if args is not None:
            return _dims(args, source)
    return None


def _dims(args: str, source: str) -> Optional[tuple[int, ...]]:
    parts = split_top(args)
    if not 1 <= len(parts) <= 3:
        return None
    values = [const_value(a, source) for a in parts]
    if any(v is None or v < 1 for v in values):
        return None
    dims = list(values)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return tuple(dims)  # type: ignore[arg-type]


def split_top(args: str) -> list[str]:
    """``args`` split at the commas outside parentheses and braces."""
    parts, depth, cur = [], 0, []
    for c in args:
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


def block_from_file(kernel: Kernel, sites: Sequence[LaunchSite], source: str,
                    file_text: Optional[str] = None) -> Optional[tuple[tuple[int, ...], str]]:
    """(block shape, where it came from) from the first of ``kernel``'s launch sites with a
    literal block, else from ``__launch_bounds__``; None when neither gives one. A block
    named by an integer local of the launching function (``unsigned int block_size = 512;``
    before ``<<<grid, block_size>>>``) is that local's value; the sites' positions are in
    ``file_text`` (the kernel's file, when ``source`` has headers before it)."""

    def text_of(site: LaunchSite) -> Optional[str]:
        if len(site.config) < 2:
            return None
        text = site.config[1]
        own = source if file_text is None else file_text
        at = offset_of(own, site.range.start.line, site.range.start.column)
        if _NAME.fullmatch(text.strip()):
            # the dim3 this launch sees: the last declaration of the name before it (each
            # launching function of a file may declare its own ``blockDim``)
            declared = dim3_declared_before(text.strip(), own, at)
            dims = _dims(locals_in(declared, own, at, set()), source) \
                if declared is not None else None
            if dims is not None:
                return f"dim3({', '.join(map(str, dims))})"
        if literal_block(text, source) is not None:
            return text
        return locals_in(text, own, at, set())

    found = block_from_texts(tuple(text_of(site) for site in sites),
                             kernel.launch_bounds[0] if kernel.launch_bounds else None, source)
    if found is None:
        return None
    shape, which = found
    if which < len(sites):
        return shape, f"the launch at line {sites[which].range.start.line + 1}"
    return shape, f"__launch_bounds__({kernel.launch_bounds[0]})"


@functools.lru_cache(maxsize=1024)
def block_from_texts(blocks: tuple[Optional[str], ...], bounds: Optional[str],
                     source: str) -> Optional[tuple[tuple[int, ...], int]]:
    """``block_from_file`` on texts: ``blocks`` are the launch sites' block arguments (None
    for a launch without one), ``bounds`` the first ``__launch_bounds__`` argument. Returns
    (block shape, index of the launch it came from, or ``len(blocks)`` for the bounds), or
    None. Cached by its arguments (many kernels of a file launch with the same block)."""
    for i, text in enumerate(blocks):
        if text is not None:
            block = literal_block(text, source)
            if block is not None:
                return block, i
    if bounds is not None:
        v = const_value(bounds, source)
        if v is not None and v >= 1:
            return (v,), len(blocks)
    return None
