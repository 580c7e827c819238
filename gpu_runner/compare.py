"""Comparing a candidate's buffers with the baseline's (numpy, no GPU needed).

Tolerance (docs/architecture.md, "Correctness"): a float output matches where
``|cand - ref| <= atol + rtol * |ref|`` elementwise, with by default
``rtol`` = 1e-2 (float16), 1e-4 (float32), 1e-10 (float64) and ``atol = rtol * scale``,
``scale`` being max |ref| over the output's finite elements. A spec's ``Tolerance`` replaces
``rtol`` and ``atol`` (``atol`` multiplied by the scale when ``scaled``). Equal values match
(also infinities of the same sign); an infinity matches nothing else; where the reference is
NaN the candidate must be NaN, and NaN against a number never matches. Integer outputs match exactly, whatever the tolerance.

Narrow floats (``bfloat16``, ``float8_e4m3``, ``float8_e5m2``; host arrays hold their bits, see
``gpu_runner.elements``) are decoded to float32 and compared there, with a default ``rtol`` of
two units in the last place at 1.0, ``2 * 2**(1 - p)`` for a significand of ``p`` bits
(bfloat16 p = 8: 2**-6; float8_e4m3 p = 4: 0.25; float8_e5m2 p = 3: 0.5): a float32 result
rounded to the narrow type is within half an ulp of the exact one, and a candidate that orders
its float32 arithmetic differently can round to the neighbouring code, one ulp away; the
second ulp leaves room for inputs rounded once more on the way. The precisions are the
formats' (Intel's BFLOAT16 definition; OCP OFP8 specification, revision 1.0, table 1).

A constant float output (every element equal to the first, NaN equal to NaN) where the
reference is not constant is held to the element type's default bounds, whatever the spec's
tolerance (``constant_where_varying``): with a loose tolerance (bounds ``t * (|ref| + scale)``)
an all-zero output would pass wherever ``|ref| <= t / (1 - t) * scale``, i.e. everywhere from
``t = 0.5`` on.

Every check returns ``None`` when all is well, else a ``Difference`` naming the first
(lowest-index) offending element.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

import numpy as np

from gpu_runner import elements
from gpu_runner.patterns import bits_dtype, is_float, poison_mask
from gpu_runner.problem import Tolerance

DEFAULT_RTOL = {"float16": 1e-2, "float32": 1e-4, "float64": 1e-10,
                **{name: 2.0 * 2.0 ** (1 - f.precision) for name, f in elements.FORMATS.items()}}


def values_of(raw: np.ndarray, dtype: str) -> np.ndarray:
    """The values a host array stands for: narrow floats' bits decoded to float32, any other
    array unchanged (shape kept)."""
    return elements.decode(raw, dtype) if elements.is_narrow(dtype) else raw


@dataclass(frozen=True)
class Difference:
    """The first offending element: ``index`` into the buffer, the ``expected`` and
    ``actual`` values (Python float for float buffers, int for integer ones), and how many
    of the ``total`` elements offend."""

    index: int
    expected: Union[int, float]
    actual: Union[int, float]
    count: int
    total: int


@dataclass(frozen=True)
class Bounds:
    """Resolved elementwise bounds for one output: ``|cand - ref| <= atol + rtol * |ref|``.
    ``exact`` for integer outputs (``rtol`` and ``atol`` are then 0)."""

    rtol: float
    atol: float
    exact: bool = False

    def describe(self) -> str:
        """``"rtol 0.0001, atol 0.0004"``, or ``"exact match"`` for integers."""
        return "exact match" if self.exact else f"rtol {self.rtol:.3g}, atol {self.atol:.3g}"


def _scalar(values: np.ndarray, index: int) -> Union[int, float]:
    v = values[index]
    return float(v) if is_float(values.dtype) else int(v)


def _first(bad: np.ndarray, ref: np.ndarray, cand: np.ndarray) -> Optional[Difference]:
    count = int(np.count_nonzero(bad))
    if count == 0:
        return None
    index = int(np.argmax(bad))
    return Difference(index=index, expected=_scalar(ref, index), actual=_scalar(cand, index),
                      count=count, total=int(bad.size))


def output_scale(ref: np.ndarray) -> float:
    """max |ref| over the finite elements (0.0 when there are none)."""
    finite = ref[np.isfinite(ref)]
    return float(np.max(np.abs(finite.astype(np.float64)))) if finite.size else 0.0


def bounds_for(ref: np.ndarray, tolerance: Optional[Tolerance] = None,
               dtype: Optional[str] = None) -> Bounds:
    """The bounds an output with reference values ``ref`` is held to (see the module doc).
    ``dtype`` names the element type when ``ref`` holds a narrow float's bits.
    Raises ``ValueError`` for an element type without a default tolerance."""
    name = dtype or ref.dtype.name
    return resolve_bounds(name, tolerance, lambda: output_scale(values_of(ref, name)))


def resolve_bounds(dtype: str, tolerance: Optional[Tolerance],
                   scale: Callable[[], float]) -> Bounds:
    """``bounds_for`` given the output's element type and a function returning its scale
    (max |ref| over the finite elements), called only when the bounds are scaled.
    Raises ``ValueError`` for an element type without a default tolerance."""
    if not is_float(dtype):
        return Bounds(0.0, 0.0, exact=True)
    if tolerance is None:
        if dtype not in DEFAULT_RTOL:
            raise ValueError(f"no default tolerance for element type {dtype}; "
                             f"expected one of {', '.join(DEFAULT_RTOL)}")
        rtol = atol = DEFAULT_RTOL[dtype]
        scaled = True
    else:
        rtol, atol, scaled = tolerance.rtol, tolerance.atol, tolerance.scaled
    return Bounds(rtol=rtol, atol=atol * scale() if scaled else atol)


def mismatch(ref: np.ndarray, cand: np.ndarray, bounds: Bounds,
             dtype: Optional[str] = None) -> Optional[Difference]:
    """The first element of ``cand`` outside ``bounds`` around ``ref`` (same shape and
    dtype), or None. ``dtype`` names the element type when the arrays hold a narrow float's
    bits: they are decoded to float32 first."""
    _check_shapes(ref, cand)
    if dtype is not None and elements.is_narrow(dtype):
        ref, cand = values_of(ref, dtype), values_of(cand, dtype)
    if bounds.exact:
        return _first(ref != cand, ref, cand)
    r = ref.astype(np.float64)
    c = cand.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(c - r) <= bounds.atol + bounds.rtol * np.abs(r)
        ok = (r == c) | (close & np.isfinite(r) & np.isfinite(c))
    ok |= np.isnan(r) & np.isnan(c)
    return _first(~ok, ref, cand)


def is_constant(values: np.ndarray) -> bool:
    """Whether every element of the float array ``values`` equals the first as a number (NaN
    counts as equal to NaN, -0.0 to 0.0); True for fewer than two elements."""
    if values.size < 2:
        return True
    v = values.astype(np.float64)
    first = v.flat[0]
    if np.isnan(first):
        return bool(np.all(np.isnan(v)))
    return bool(np.all(v == first))


def constant_where_varying(ref: np.ndarray, cand: np.ndarray) -> Optional[Difference]:
    """For a float output: when ``cand`` is constant and ``ref`` is not, the first element of
    ``cand`` outside the element type's default bounds around ``ref`` (see the module doc),
    else None. Integer outputs give None (they match exactly anyway)."""
    _check_shapes(ref, cand)
    if not is_float(ref.dtype) or ref.dtype.name not in DEFAULT_RTOL:
        return None
    if not is_constant(cand) or is_constant(ref):
        return None
    return mismatch(ref, cand, bounds_for(ref))


def unwritten(ref: np.ndarray, cand: np.ndarray,
              dtype: Optional[str] = None) -> Optional[Difference]:
    """The first element that still holds the poison in ``cand`` where the baseline's
    output ``ref`` does not (the baseline wrote it, the candidate did not), or None.
    ``dtype`` names the element type when the arrays hold a narrow float's bits (the
    difference then reports decoded values)."""
    _check_shapes(ref, cand)
    name = dtype or ref.dtype.name
    bad = poison_mask(cand, name) & ~poison_mask(ref, name)
    return _first(bad, values_of(ref, name), values_of(cand, name))


def identical(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` hold the same bits (same shape and type); bit-identical
    outputs pass every output check, so the checks can be skipped."""
    _check_shapes(a, b)
    return bool(np.array_equal(np.ascontiguousarray(a).view(bits_dtype(a.dtype)),
                               np.ascontiguousarray(b).view(bits_dtype(b.dtype))))


def changed(before: np.ndarray, after: np.ndarray,
            dtype: Optional[str] = None) -> Optional[Difference]:
    """The first element whose bits differ between ``before`` and ``after``, or None.
    Bitwise, so NaN equals the same NaN and -0.0 differs from 0.0. ``dtype`` names the element
    type when the arrays hold a narrow float's bits (the difference reports decoded values)."""
    _check_shapes(before, after)
    b = np.ascontiguousarray(before).view(bits_dtype(before.dtype))
    a = np.ascontiguousarray(after).view(bits_dtype(after.dtype))
    name = dtype or before.dtype.name
    return _first(a != b, values_of(before, name), values_of(after, name))


def _check_shapes(a: np.ndarray, b: np.ndarray) -> None:
    if a.shape != b.shape or a.dtype != b.dtype:
        raise ValueError(f"expected arrays of equal shape and type, found {a.shape} {a.dtype} "
                         f"and {b.shape} {b.dtype}")
