"""Comparing a candidate's buffers with the baseline's (numpy, no GPU needed).

Tolerance (docs/architecture.md, "Correctness"): a float output matches where
``|cand - ref| <= atol + rtol * |ref|`` elementwise, with by default
``rtol`` = 1e-2 (float16), 1e-4 (float32), 1e-10 (float64) and ``atol = rtol * scale``,
``scale`` being max |ref| over the output's finite elements. A spec's ``Tolerance`` replaces
``rtol`` and ``atol`` (``atol`` multiplied by the scale when ``scaled``). Equal values match
(also infinities of the same sign); an infinity matches nothing else; where the reference is
NaN the candidate must be NaN, and NaN against a number never matches. Integer outputs match exactly, whatever the tolerance.

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

from gpu_runner.patterns import bits_dtype, is_float, poison_mask
from gpu_runner.problem import Tolerance

DEFAULT_RTOL = {"float16": 1e-2, "float32": 1e-4, "float64": 1e-10}


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


def bounds_for(ref: np.ndarray, tolerance: Optional[Tolerance] = None) -> Bounds:
    """The bounds an output with reference values ``ref`` is held to (see the module doc).
    Raises ``ValueError`` for an element type without a default tolerance."""
    return resolve_bounds(ref.dtype.name, tolerance, lambda: output_scale(ref))


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


def mismatch(ref: np.ndarray, cand: np.ndarray, bounds: Bounds) -> Optional[Difference]:
    """The first element of ``cand`` outside ``bounds`` around ``ref`` (same shape and
    dtype), or None."""
    _check_shapes(ref, cand)
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


def unwritten(ref: np.ndarray, cand: np.ndarray) -> Optional[Difference]:
    """The first element that still holds the poison in ``cand`` where the baseline's
    output ``ref`` does not (the baseline wrote it, the candidate did not), or None."""
    _check_shapes(ref, cand)
    return _first(poison_mask(cand) & ~poison_mask(ref), ref, cand)


def identical(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` hold the same bits (same shape and type); bit-identical
    outputs pass every output check, so the checks can be skipped."""
    _check_shapes(a, b)
    return bool(np.array_equal(np.ascontiguousarray(a).view(bits_dtype(a.dtype)),
                               np.ascontiguousarray(b).view(bits_dtype(b.dtype))))


def changed(before: np.ndarray, after: np.ndarray) -> Optional[Difference]:
    """The first element whose bits differ between ``before`` and ``after``, or None.
    Bitwise, so NaN equals the same NaN and -0.0 differs from 0.0."""
    _check_shapes(before, after)
    b = np.ascontiguousarray(before).view(bits_dtype(before.dtype))
    a = np.ascontiguousarray(after).view(bits_dtype(after.dtype))
    return _first(a != b, before, after)


def _check_shapes(a: np.ndarray, b: np.ndarray) -> None:
    if a.shape != b.shape or a.dtype != b.dtype:
        raise ValueError(f"expected arrays of equal shape and type, found {a.shape} {a.dtype} "
                         f"and {b.shape} {b.dtype}")
