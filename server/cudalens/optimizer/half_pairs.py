"""Half-precision pairs for the vectorized grid-stride rewrite: ``half2`` and ``__nv_bfloat162``.

A 2-byte float element (spec ``half``/``float16``, ``bfloat16``) moves as the toolkit's pair
type, two elements per 4-byte load or store, and where the per-element work is one expression
of the pair-able operations below it is computed on both elements by one paired instruction
(CUDA Math API, "Half Precision Intrinsics" (``cuda_fp16.h``) and "Bfloat16 Precision
Intrinsics" (``cuda_bf16.h``): ``__hadd2``, ``__hsub2``, ``__hmul2``, ``__hfma2``, ``__hneg2``,
``__habs2``, ``__hmax2``, ``__hmin2``, the same names for both types). Otherwise each element
of the pair runs the user's own expression (its float conversions included), ``p2.x`` then
``p2.y``.

Translated, for one expression whose leaves are the element accesses and scalar parameters of
the same type: ``+``, ``-``, ``*`` and unary ``-`` (the type's operators), ``A * B + C`` and
``C + A * B`` as one ``__hfma2`` (the original rounds the product first, ``__hfma2`` once:
within the half-precision tolerance the runner checks), the scalar intrinsics above by their
paired names, parentheses. A scalar parameter ``a`` becomes a pair ``a2`` of two copies
(``__half2half2(a)``, ``__bfloat162bfloat162(a)``), declared once before the loop.

``__nv_bfloat162`` arithmetic is native from compute capability 8.0 (``cuda_bf16.hpp`` guards
it with ``__CUDA_ARCH__ >= 800``), so the paired loop of a bfloat16 kernel is compiled only
there (``PairType.arch_guard``); elsewhere the scalar loop takes every element.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

import tree_sitter

from cudalens.kernel_model.syntax import Parsed, named_children, unparen
from cudalens.spec import dtypes


@dataclass(frozen=True)
class PairType:
    """``pair``: the toolkit's type of two elements; ``splat``: the function making a pair of
    two copies of a scalar; ``arch_guard``: the ``#if`` line the paired loop needs, or ''."""

    pair: str
    splat: str
    arch_guard: str = ""


HALF = PairType("half2", "__half2half2")
BFLOAT16 = PairType("__nv_bfloat162", "__bfloat162bfloat162",
                    "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800")
# numpy-side name of the spec type (``dtypes.numpy_dtype``) -> pair type
_BY_DTYPE = {"float16": HALF, "bfloat16": BFLOAT16}
_BINARY = {"+": "__hadd2", "-": "__hsub2", "*": "__hmul2"}
_CALLS = {"__hadd": "__hadd2", "__hsub": "__hsub2", "__hmul": "__hmul2", "__hfma": "__hfma2",
          "__hneg": "__hneg2", "__habs": "__habs2", "__hmax": "__hmax2", "__hmin": "__hmin2"}


def pair_type(spec_type: str) -> Optional[PairType]:
    """The pair type of a spec element type (``half``, ``float16``, ``bfloat16``), else None."""
    if spec_type not in dtypes.SPEC_TYPES:
        return None
    return _BY_DTYPE.get(dtypes.numpy_dtype(spec_type))


@dataclass(frozen=True)
class Paired:
    """A translated expression: ``text`` over the pair registers, ``splats`` the scalar
    parameters it needs as pairs (name -> pair register name), ``ops`` the intrinsics used."""

    text: str
    splats: dict
    ops: tuple


def translate(node: tree_sitter.Node, parsed: Parsed, registers: Mapping[tuple[int, int], str],
              scalars: Mapping[str, str]) -> Optional[Paired]:
    """``node`` (the right side of ``y[i] = ...``) as one paired expression, or None when it
    uses anything the module docstring does not list.

    registers: the byte span of each element access ``p[i]`` -> its pair register (``x2``);
    scalars: the scalar parameters of the element type -> the name of their pair (``a2``).
    """
    splats: dict[str, str] = {}
    ops: list[str] = []

    def go(n: tree_sitter.Node) -> Optional[str]:
        n = unparen(n)
        if (n.start_byte, n.end_byte) in registers:
            return registers[(n.start_byte, n.end_byte)]
        if n.type == "identifier" and parsed.text_of(n) in scalars:
            name = parsed.text_of(n)
            splats[name] = scalars[name]
            return scalars[name]
        if n.type == "unary_expression" and n.child_by_field_name("operator").type == "-":
            inner = go(n.child_by_field_name("argument"))
            return None if inner is None else _call("__hneg2", inner)
        if n.type == "binary_expression":
            op = n.child_by_field_name("operator").type
            left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
            if op == "+":
                for prod, addend in ((left, right), (right, left)):
                    p = unparen(prod)
                    if p.type == "binary_expression" and \
                            p.child_by_field_name("operator").type == "*":
                        a, b, c = (go(p.child_by_field_name("left")),
                                   go(p.child_by_field_name("right")), go(addend))
                        if None not in (a, b, c):
                            return _call("__hfma2", a, b, c)
            if op in _BINARY:
                a, b = go(left), go(right)
                return None if None in (a, b) else _call(_BINARY[op], a, b)
            return None
        if n.type == "call_expression":
            fn = n.child_by_field_name("function")
            name = parsed.text_of(fn) if fn is not None and fn.type == "identifier" else ""
            args = n.child_by_field_name("arguments")
            if name not in _CALLS or args is None:
                return None
            parts = [go(a) for a in named_children(args)]
            return None if None in parts else _call(_CALLS[name], *parts)
        return None

    def _call(fn: str, *args: str) -> str:
        ops.append(fn)
        return f"{fn}({', '.join(args)})"

    text = go(node)
    if text is None or not ops:
        return None
    return Paired(text, splats, tuple(dict.fromkeys(ops)))
