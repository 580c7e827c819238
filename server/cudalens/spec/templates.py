"""Template instances and type aliases a kernel's file gives, for spec inference.

- Instances of a template kernel ``NAME``: explicit instantiations
  (``template __global__ void NAME<float, 256>(...);``) and launches or calls naming the
  arguments (``NAME<float, 256><<<g, b>>>(...)``), in file order, each once (spaces ignored).
- Bindings: the template parameters of the kernel (``T``, ``BLOCK``) to the argument texts of
  one instance, by position.
- Aliases: ``typedef TYPE NAME;`` and ``using NAME = TYPE;`` (the first of each name), followed
  through chains (``typedef floatX realT;``) up to a fixed depth, so ``floatX`` resolves to
  ``__nv_bfloat16``. A textual scan: enough for drafting, never for checking.
"""

from __future__ import annotations

import functools
import re
from typing import Optional

from cudalens.source.model import Kernel

_ARGS = r"<(?P<args>[^<>;{}]*(?:<[^<>;{}]*>[^<>;{}]*)*)>"
_TYPEDEF = re.compile(r"\btypedef\s+(?!struct\b|class\b|union\b|enum\b)(?P<type>[^;{}()]*?)"
                      r"\s*\b(?P<name>[A-Za-z_]\w*)\s*;")
_USING = re.compile(r"\busing\s+(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<type>[^;{}()]+?)\s*;")
_MAX_CHAIN = 8


def split_args(text: str) -> list[str]:
    """``"float, Pair<int, 2>, 256"`` -> ``["float", "Pair<int, 2>", "256"]``."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def instance_text(name: str, args: list[str]) -> str:
    """``reduce``, ``["float", "256"]`` -> ``"reduce<float, 256>"``."""
    return f"{name}<{', '.join(args)}>"


@functools.lru_cache(maxsize=64)
def instances(name: str, source: str) -> tuple[str, ...]:
    """The template instances of kernel ``name`` that ``source`` names, as
    ``NAME<ARG, ...>`` texts (one space after each comma), in order of first appearance."""
    pattern = re.compile(rf"(?<![\w:.]){re.escape(name)}\s*{_ARGS}\s*(?:<<<|\()")
    found: dict[str, None] = {}
    for m in pattern.finditer(source):
        args = split_args(m.group("args"))
        if args:
            found.setdefault(instance_text(name, args), None)
    return tuple(found)


def site_instance(name: str, source: str, at: int) -> Optional[str]:
    """The ``NAME<ARG, ...>`` text of the launch of kernel ``name`` that starts at offset
    ``at`` of ``source`` (``row_softmax<true, 32, 32><<<g, b>>>(...)``), None when the launch
    writes no template arguments there."""
    m = re.compile(rf"{re.escape(name)}\s*{_ARGS}\s*<<<").match(source, at)
    if m is None:
        return None
    args = split_args(m.group("args"))
    return instance_text(name, args) if args else None


def bindings(kernel: Kernel, instance: str) -> dict[str, str]:
    """Template parameter -> argument text for ``instance`` (``reduce<float, 256>``), by
    position; empty when the instance has no arguments or the kernel is no template."""
    if "<" not in instance or not kernel.template_parameters:
        return {}
    args = split_args(instance[instance.index("<") + 1:instance.rindex(">")])
    return dict(zip(kernel.template_parameters, args))


@functools.lru_cache(maxsize=16)
def aliases(source: str) -> dict[str, str]:
    """Alias name -> aliased type text (first declaration of each name)."""
    out: dict[str, str] = {}
    for rx in (_TYPEDEF, _USING):
        for m in rx.finditer(source):
            out.setdefault(m.group("name"), " ".join(m.group("type").split()))
    return out


_TYPE_TEXT = re.compile(r"[A-Za-z_][\w \t:<>,*&]*")


@functools.lru_cache(maxsize=16)
def type_macros(source: str) -> dict[str, str]:
    """Object-like macro name -> replacement text, for the ``#define``s of ``source`` whose text
    reads as a type (words, ``::``, ``<>``, ``*``: ``#define DATA_TYPE double``), the first of
    each name outside the branches the preprocessor certainly skips
    (``spec.defines.object_macros``: a ``#define DATA_TYPE double`` line from the build's
    ``-D`` before the text skips a header's ``#ifndef DATA_TYPE`` default)."""
    from cudalens.spec.defines import object_macros

    return {n: " ".join(t.split()) for n, t in object_macros(source).items()
            if _TYPE_TEXT.fullmatch(t)}


def resolve_type(ctype: str, source: str, bound: Optional[dict[str, str]] = None) -> str:
    """``ctype`` with template parameters replaced by their arguments (``bound``), and
    object-like macros whose text is a type (``type_macros``) and aliases (``typedef``,
    ``using``) followed: ``const floatX`` -> ``const __nv_bfloat16``, ``DATA_TYPE *`` with
    ``#define DATA_TYPE double`` -> ``double *``. A name that is both a macro and an alias
    is the macro (the preprocessor runs first). Words that are none of these stay."""
    table = {**aliases(source), **type_macros(source)}
    bound = bound or {}
    text = ctype
    for _ in range(_MAX_CHAIN):
        words = re.findall(r"[A-Za-z_]\w*", text)
        hit = next((w for w in words if w in bound or w in table), None)
        if hit is None:
            break
        text = re.sub(rf"\b{re.escape(hit)}\b", bound.get(hit, table.get(hit, hit)), text)
    return text
