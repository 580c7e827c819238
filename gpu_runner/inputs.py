"""Random host inputs for a case (numpy, no GPU needed).

Every input and in-out buffer of a ``Case`` gets uniform random values in the buffer's
``[low, high)``: floats are drawn in float64 and rounded to the buffer's type, then kept
inside the range in that type; integers are drawn as integers ``x`` with ``low <= x < high``.
Output buffers get no input (the runner poisons them instead).

A buffer's ``fill`` changes the draw (``problem.FILLS``):

- ``normal``: normal values of mean ``params[0]`` and standard deviation ``params[1]``, rounded
  to the type (integers to the nearest integer) and clipped to its finite values;
- ``csr``: CSR row pointers for ``length - 1`` rows and ``params[0]`` non-zeros: starts at 0,
  ends at the non-zero count, non-decreasing in between (the interior points are uniform
  integers in ``[0, nnz]``, sorted);
- ``sorted``: the uniform draw, in ascending order;
- ``permutation``: each of ``0 .. length - 1`` once, in random order;
- ``unique``: distinct integers in ``[low, high)`` (``high - low >= length``), in random order.

Narrow floats (``bfloat16``, ``float8_e4m3``, ``float8_e5m2``) are drawn like float64 values,
rounded to the type (to nearest, ties to even) and kept inside ``[low, high)``; the arrays hold
their bit patterns (``gpu_runner.elements``).

Each buffer draws from its own stream, seeded by ``(seed, crc32(case label),
crc32(buffer name))`` through ``numpy.random.SeedSequence``, so the same seed gives
bit-identical inputs in every process and for every variant (baseline and candidates alike),
and adding a buffer to a case does not change the others' values.
"""

from __future__ import annotations

import math
import zlib

import numpy as np

from gpu_runner import elements
from gpu_runner.problem import FILLS, Buffer, Case


class InputRangeError(ValueError):
    """A buffer's ``[low, high)`` holds no value of its element type."""


def _rng(seed: int, case_label: str, buffer_name: str) -> np.random.Generator:
    key = [int(seed) & 0xFFFFFFFF, zlib.crc32(case_label.encode()), zlib.crc32(buffer_name.encode())]
    return np.random.default_rng(np.random.SeedSequence(key))


def _float_values(buf: Buffer, rng: np.random.Generator, where: str) -> np.ndarray:
    dtype = np.dtype(buf.dtype)
    low, high = dtype.type(buf.low), dtype.type(buf.high)
    if float(low) < buf.low:  # rounding took the bound below the range: step inside it
        low = np.nextafter(low, dtype.type(np.inf))
    if float(high) >= buf.high:  # exclusive upper bound
        high = np.nextafter(dtype.type(buf.high), dtype.type(-np.inf))
    if not (np.isfinite(low) and np.isfinite(high)) or low > high:
        raise InputRangeError(f"{where}: range [{buf.low}, {buf.high}) holds no finite "
                              f"{buf.dtype} value")
    values = rng.uniform(buf.low, buf.high, size=buf.length).astype(dtype)
    return np.clip(values, low, high)


def _int_values(buf: Buffer, rng: np.random.Generator, where: str) -> np.ndarray:
    info = np.iinfo(buf.dtype)
    low = math.ceil(buf.low)
    high = math.ceil(buf.high)  # first integer not below high: exclusive bound
    if low >= high:
        raise InputRangeError(f"{where}: range [{buf.low}, {buf.high}) holds no integer")
    if low < info.min or high - 1 > info.max:
        raise InputRangeError(f"{where}: range [{buf.low}, {buf.high}) does not fit {buf.dtype} "
                              f"([{info.min}, {info.max}])")
    return rng.integers(low, high, size=buf.length, dtype=buf.dtype)


def _narrow_values(buf: Buffer, rng: np.random.Generator, where: str) -> np.ndarray:
    try:
        low, high = elements.codes_in_range(buf.dtype, buf.low, buf.high)
    except ValueError as exc:
        raise InputRangeError(f"{where}: {exc}") from None
    values = rng.uniform(buf.low, buf.high, size=buf.length)
    return _narrow(np.clip(values, low, high), buf.dtype, low, high)


def _narrow(values: np.ndarray, dtype: str, low: float, high: float) -> np.ndarray:
    """Bits of ``values`` in a narrow format, every decoded value within [low, high]."""
    bits = elements.encode(values, dtype)
    decoded = elements.decode(bits, dtype)
    low_bits, high_bits = elements.encode(np.array([low, high]), dtype)
    bits = np.where(decoded < low, low_bits, bits)
    return np.where(decoded > high, high_bits, bits).astype(bits.dtype)


def _is_float(dtype: str) -> bool:
    return elements.is_narrow(dtype) or np.dtype(dtype).kind == "f"


def _uniform(buf: Buffer, rng: np.random.Generator, where: str) -> np.ndarray:
    if elements.is_narrow(buf.dtype):
        return _narrow_values(buf, rng, where)
    if np.dtype(buf.dtype).kind == "f":
        return _float_values(buf, rng, where)
    return _int_values(buf, rng, where)


def _normal(buf: Buffer, rng: np.random.Generator, where: str) -> np.ndarray:
    if len(buf.params) != 2 or not buf.params[1] > 0:
        raise InputRangeError(f"{where}: expected normal(MEAN, STD) with STD > 0, found "
                              f"parameters {buf.params}")
    values = rng.normal(buf.params[0], buf.params[1], size=buf.length)
    if elements.is_narrow(buf.dtype):
        top = elements.max_finite(buf.dtype)
        return _narrow(np.clip(values, -top, top), buf.dtype, -top, top)
    dtype = np.dtype(buf.dtype)
    if dtype.kind == "f":
        top = float(np.finfo(dtype).max)
        return np.clip(values, -top, top).astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(np.rint(values), info.min, info.max).astype(dtype)


def _csr(buf: Buffer, rng: np.random.Generator, where: str) -> np.ndarray:
    if len(buf.params) != 1 or buf.params[0] < 0 or buf.length < 1:
        raise InputRangeError(f"{where}: expected csr(NNZ) with NNZ >= 0 on a buffer of at "
                              f"least 1 element, found parameters {buf.params} and length "
                              f"{buf.length}")
    nnz = int(buf.params[0])
    if buf.length == 1:
        if nnz:
            raise InputRangeError(f"{where}: csr({nnz}) needs at least 2 row pointers, "
                                  f"found length 1")
        return np.zeros(1, dtype=buf.dtype)
    if nnz > np.iinfo(buf.dtype).max:
        raise InputRangeError(f"{where}: csr({nnz}) does not fit {buf.dtype}")
    inner = np.sort(rng.integers(0, nnz + 1, size=buf.length - 2))
    return np.concatenate(([0], inner, [nnz])).astype(buf.dtype)


def _permutation(buf: Buffer, rng: np.random.Generator, where: str) -> np.ndarray:
    if buf.length - 1 > np.iinfo(buf.dtype).max:
        raise InputRangeError(f"{where}: a permutation of {buf.length} elements does not fit "
                              f"{buf.dtype}")
    return rng.permutation(buf.length).astype(buf.dtype)


def _unique(buf: Buffer, rng: np.random.Generator, where: str) -> np.ndarray:
    low, high = math.ceil(buf.low), math.ceil(buf.high)
    if high - low < buf.length:
        raise InputRangeError(f"{where}: unique needs at least {buf.length} distinct integers, "
                              f"range [{buf.low}, {buf.high}) holds {max(0, high - low)}")
    _int_values(buf, rng, where)  # checks that the range fits the type
    return (rng.choice(high - low, size=buf.length, replace=False) + low).astype(buf.dtype)


def buffer_values(buf: Buffer, seed: int, case_label: str) -> np.ndarray:
    """The input values of one ``in``/``inout`` buffer: shape ``(buf.length,)``, dtype
    ``buf.dtype`` (narrow floats: their storage integers). Raises ``InputRangeError`` when the
    range or the fill's parameters hold no value of the type (``csr``, ``permutation`` and
    ``unique`` on a float buffer too) and ``ValueError`` for an ``out`` buffer or an unknown
    fill."""
    where = f"case '{case_label}', buffer '{buf.name}'"
    if buf.role == "out":
        raise ValueError(f"{where}: output buffers get no input values")
    if buf.fill not in FILLS:
        raise ValueError(f"{where}: expected a fill in {FILLS}, found {buf.fill!r}")
    if buf.fill in ("csr", "permutation", "unique") and _is_float(buf.dtype):
        raise InputRangeError(f"{where}: {buf.fill} makes integer values, found element type "
                              f"{buf.dtype}")
    rng = _rng(seed, case_label, buf.name)
    if buf.fill == "normal":
        return _normal(buf, rng, where)
    if buf.fill == "csr":
        return _csr(buf, rng, where)
    if buf.fill == "permutation":
        return _permutation(buf, rng, where)
    if buf.fill == "unique":
        return _unique(buf, rng, where)
    values = _uniform(buf, rng, where)
    if buf.fill == "sorted":
        if elements.is_narrow(buf.dtype):  # sort the values, keep the bits
            return values[np.argsort(elements.decode(values, buf.dtype), kind="stable")]
        return np.sort(values)
    return values


def make_inputs(case: Case, seed: int) -> dict[str, np.ndarray]:
    """Host arrays for every ``in`` and ``inout`` buffer of ``case``, keyed by buffer name.
    ``out`` buffers and scalars are absent. A captured case (``case.captured``) gets its
    captured values whatever the seed (``gpu_runner.captured``; raises its
    ``CapturedDataError``)."""
    if case.captured is not None:
        from gpu_runner.captured import captured_inputs  # noqa: PLC0415

        return captured_inputs(case)
    return {a.name: buffer_values(a, seed, case.label)
            for a in case.args if isinstance(a, Buffer) and a.role != "out"}
