"""Pass ``fast_math``: faster, less precise single-precision math, as a candidate only.

Two modes:

- ``intrinsics``: calls in the kernel's body to ``expf``, ``logf``, ``sinf``, ``cosf``,
  ``tanf``, ``powf``, ``exp10f``, ``log2f`` and ``log10f`` become their hardware intrinsics
  (``__expf`` ...), which run on the special function units in a few instructions instead of a
  software sequence, with larger (documented) errors (CUDA C++ Programming Guide,
  "Intrinsic Functions", tables of maximum ulp errors).
- ``option``: the whole file compiled with ``-use_fast_math`` (intrinsics everywhere, plus
  ``-ftz=true -prec-div=false -prec-sqrt=false``: denormals flushed to zero, approximate
  division and square root; nvcc documentation, "--use_fast_math").

Neither keeps results bit for bit, and nothing here proves them close enough: the runner
compares every output against the original's within the spec's tolerance (relative 1e-4 for
float by default, scaled by the output's magnitude) on several seeds and sizes, and a
candidate outside it is never offered. A spec's ``tolerance`` line is the user's word on how
close is close enough.

Applies when the body does single-precision arithmetic, whatever the buffers' types (a
bfloat16 or half kernel that computes in ``float`` locals is one): it calls a
single-precision math function (``sqrtf``, ``expf``, ...) or divides with a ``float``
operand (a float parameter or local, or a literal such as ``1.0f``) (``option``), and, for
``intrinsics``, calls one of the functions above.
"""

from __future__ import annotations

import re
from typing import Optional

from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.kernel_model.edits import Edit, apply_edits
from cudalens.kernel_model.model import find_definition
from cudalens.kernel_model.syntax import parse, walk
from cudalens.spec import dtypes

name = "fast_math"
APPROXIMATE = True  # results change within tolerance; never bit for bit

INTRINSICS = {"expf": "__expf", "logf": "__logf", "sinf": "__sinf", "cosf": "__cosf",
              "tanf": "__tanf", "powf": "__powf", "exp10f": "__exp10f", "log2f": "__log2f",
              "log10f": "__log10f"}
# Single-precision functions -use_fast_math also affects (through -prec-sqrt, -prec-div,
# -ftz): square roots, reciprocals, and everything built on them.
_AFFECTED = set(INTRINSICS) | {"sqrtf", "rsqrtf", "expf", "exp2f", "expm1f", "log1pf", "tanhf",
                               "erff", "sinhf", "coshf", "atan2f", "hypotf", "normf", "fdividef"}
MODES = ("intrinsics", "option")
OPTION = "-use_fast_math"


# single-precision literals carry the f suffix (2.0 is a double: x / 2.0 divides in double)
_FLOAT_LITERAL = re.compile(r"^(\d+\.\d*|\.\d+|\d+\.?\d*[eE][-+]?\d+)[fF]$")


def _float_names(ctx: PassContext, parsed, body) -> set[str]:
    """Parameters and locals declared ``float`` (pointers to float included: their elements
    are floats)."""
    names = {p.name for p in ctx.kernel.parameters if p.type == "float"}
    for n in walk(body):
        if n.type == "declaration":
            t = n.child_by_field_name("type")
            if t is not None and parsed.text_of(t) == "float":
                for d in n.children_by_field_name("declarator"):
                    inner = d
                    while inner is not None and inner.type != "identifier":
                        inner = inner.child_by_field_name("declarator")
                    if inner is not None:
                        names.add(parsed.text_of(inner))
    return names


def _is_float(node, parsed, floats: set[str]) -> bool:
    """A division whose operands involve a float literal or a float variable (a light type
    inference: integer divisions, such as the index arithmetic of generated code, do not
    count)."""
    for n in walk(node):
        if n.type == "number_literal" and _FLOAT_LITERAL.match(parsed.text_of(n)):
            return True
        if n.type == "identifier" and parsed.text_of(n) in floats:
            return True
    return False


def _facts(ctx: PassContext):
    """(reason or None, replaceable call nodes, affected function names, divides)."""
    parsed = parse(ctx.text)
    definition = find_definition(parsed, ctx.kernel)
    if definition is None:
        return (f"the definition of {ctx.kernel.name} is not one piece in the file's syntax "
                f"tree (parse errors around it)"), parsed, [], set(), False
    single = any(dtypes.SPEC_TYPES.get(getattr(p, "type", ""), "") == "float32"
                 for p in ctx.spec.params)
    body = definition.child_by_field_name("body")
    floats = _float_names(ctx, parsed, body)
    calls, affected, divides = [], set(), False
    for n in walk(body):
        if n.type == "call_expression":
            fn = n.child_by_field_name("function")
            word = parsed.text_of(fn) if fn is not None else ""
            if word in INTRINSICS:
                calls.append(fn)
            if word in _AFFECTED:
                affected.add(word)
        elif n.type in ("binary_expression", "assignment_expression") and \
                (n.child_by_field_name("operator").type in ("/", "/=")) and \
                _is_float(n, parsed, floats):
            divides = True
    if not affected and not divides:
        if not single and not floats and not any(
                n.type == "number_literal" and _FLOAT_LITERAL.match(parsed.text_of(n))
                for n in walk(body)):
            return ("the kernel does no single-precision arithmetic (no float data in the "
                    "spec, no float variable or literal in the body); fast math changes only "
                    "single-precision arithmetic"), parsed, [], set(), False
        return ("the kernel calls no single-precision math function and does not divide; "
                "fast math would change nothing"), parsed, [], set(), False
    return None, parsed, calls, affected, divides


def check(ctx: PassContext) -> Optional[str]:
    """None when some mode applies, else the reason."""
    return _facts(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """``intrinsics`` (when the body calls a function that has one) first, then ``option``."""
    reason, _, calls, _, _ = _facts(ctx)
    if reason:
        return ()
    out = [{"mode": "intrinsics"}] if calls else []
    return tuple(out + [{"mode": "option"}])


def apply(ctx: PassContext, mode: str = "intrinsics") -> PassResult:
    """The rewritten source (``intrinsics``) or the same source with ``-use_fast_math``.

    Raises:
        PassNotApplicable: the precondition fails, or ``intrinsics`` was asked for and the
            body calls none of the functions that have one.
        ValueError: ``mode`` is not one of ``MODES``.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, found {mode!r}")
    reason, parsed, calls, affected, divides = _facts(ctx)
    if reason:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    judged = ("; not exact: offered only if the runner finds every output within the spec's "
              "tolerance of the original's")
    if mode == "intrinsics":
        if not calls:
            raise PassNotApplicable(f"{name} on {ctx.kernel.name}: the body calls none of "
                                    f"{', '.join(sorted(INTRINSICS))}")
        edits = [Edit(c.start_byte, c.end_byte, INTRINSICS[parsed.text_of(c)]) for c in calls]
        used = sorted({parsed.text_of(c) for c in calls})
        shown = ", ".join(f"{u} -> {INTRINSICS[u]}" for u in used)
        return PassResult(source=apply_edits(parsed.data, edits), launch=ctx.launch,
                          tags=("intrinsics",),
                          explanation=f"hardware math intrinsics ({shown}): a few special-"
                                      f"function-unit instructions instead of a software "
                                      f"sequence per call{judged}")
    what = sorted(affected) + (["division"] if divides else [])
    return PassResult(source=ctx.text, launch=ctx.launch, tags=("fastmath",),
                      explanation=f"compiled with {OPTION} ({', '.join(what)} become "
                                  f"approximate hardware instructions; denormals flush to "
                                  f"zero){judged}",
                      options=(OPTION,))
