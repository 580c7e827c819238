"""Random host inputs for a case (numpy, no GPU needed).

Every input and in-out buffer of a ``Case`` gets uniform random values in the buffer's
``[low, high)``: floats are drawn in float64 and rounded to the buffer's type, then kept
inside the range in that type; integers are drawn as integers ``x`` with ``low <= x < high``.
Output buffers get no input (the runner poisons them instead).

Each buffer draws from its own stream, seeded by ``(seed, crc32(case label),
crc32(buffer name))`` through ``numpy.random.SeedSequence``, so the same seed gives
bit-identical inputs in every process and for every variant (baseline and candidates alike),
and adding a buffer to a case does not change the others' values.
"""

from __future__ import annotations

import math
import zlib

import numpy as np

from gpu_runner.problem import Buffer, Case


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


def buffer_values(buf: Buffer, seed: int, case_label: str) -> np.ndarray:
    """The input values of one ``in``/``inout`` buffer: shape ``(buf.length,)``, dtype
    ``buf.dtype``. Raises ``InputRangeError`` when the range holds no value of the type and
    ``ValueError`` for an ``out`` buffer."""
    where = f"case '{case_label}', buffer '{buf.name}'"
    if buf.role == "out":
        raise ValueError(f"{where}: output buffers get no input values")
    rng = _rng(seed, case_label, buf.name)
    if np.dtype(buf.dtype).kind == "f":
        return _float_values(buf, rng, where)
    return _int_values(buf, rng, where)


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
