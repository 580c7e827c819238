"""Narrow floating-point element types numpy lacks: bfloat16, float8_e4m3, float8_e5m2.

The runner keeps buffers of these types on the host as their bit patterns (``uint16`` for
bfloat16, ``uint8`` for the float8 types): bytes travel to and from the device unchanged, and
only this module turns bits into values and back. Decoding is exact (every code is
representable in float32); encoding rounds to nearest, ties to even, like CUDA's
``__float2bfloat16_rn`` and ``__nv_cvt_float_to_fp8(..., __NV_SATFINITE, ...)``: float8 values
beyond the largest finite one saturate to it.

Formats (sign, exponent, stored significand bits; exponent bias):

- ``bfloat16``: 1, 8, 7; bias 127: the upper half of an IEEE 754 binary32 (Intel, "BFLOAT16 -
  Hardware Numerics Definition", 2018). Largest finite 3.3895314e38.
- ``float8_e4m3``: 1, 4, 3; bias 7; no infinities, NaN is ``S.1111.111``; largest finite 448
  (OCP "8-bit Floating Point Specification (OFP8)", revision 1.0, 2023, table 1; CUDA's
  ``__nv_fp8_e4m3``).
- ``float8_e5m2``: 1, 5, 2; bias 15; IEEE-like infinities and NaNs; largest finite 57344 (same
  specification; CUDA's ``__nv_fp8_e5m2``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Format:
    """One narrow float format: ``storage`` is the numpy integer type holding its bits."""

    name: str
    storage: str
    exponent_bits: int
    mantissa_bits: int
    ieee_specials: bool  # all-ones exponent: inf/NaN (True) or only S.1111.111 is NaN (False)

    @property
    def bias(self) -> int:
        return (1 << (self.exponent_bits - 1)) - 1

    @property
    def precision(self) -> int:
        """Significand bits including the implicit one (bfloat16: 8)."""
        return self.mantissa_bits + 1


FORMATS: dict[str, Format] = {
    "bfloat16": Format("bfloat16", "uint16", 8, 7, True),
    "float8_e4m3": Format("float8_e4m3", "uint8", 4, 3, False),
    "float8_e5m2": Format("float8_e5m2", "uint8", 5, 2, True),
}


def is_narrow(dtype: str) -> bool:
    """Whether ``dtype`` names one of the formats of this module."""
    return str(dtype) in FORMATS


def storage_dtype(dtype: str) -> np.dtype:
    """The numpy type of host arrays of ``dtype``: its storage integer for a narrow float,
    else ``numpy.dtype(dtype)``."""
    fmt = FORMATS.get(str(dtype))
    return np.dtype(fmt.storage) if fmt else np.dtype(dtype)


def itemsize(dtype: str) -> int:
    """Bytes per element (``bfloat16`` -> 2, ``float8_e4m3`` -> 1, ``float32`` -> 4)."""
    return storage_dtype(dtype).itemsize


@functools.lru_cache(maxsize=None)
def decode_table(dtype: str) -> np.ndarray:
    """The float32 value of every code of a narrow format, indexed by the code
    (shape ``(2**bits,)``); NaN codes hold NaN."""
    fmt = FORMATS[dtype]
    bits = np.dtype(fmt.storage).itemsize * 8
    if dtype == "bfloat16":
        codes = np.arange(1 << bits, dtype=np.uint32) << np.uint32(16)
        return codes.view(np.float32)
    codes = np.arange(1 << bits, dtype=np.int64)
    sign = np.where(codes >> (bits - 1), -1.0, 1.0)
    exp = (codes >> fmt.mantissa_bits) & ((1 << fmt.exponent_bits) - 1)
    man = codes & ((1 << fmt.mantissa_bits) - 1)
    frac = man / float(1 << fmt.mantissa_bits)
    normal = (1.0 + frac) * np.exp2(exp - fmt.bias)
    sub = frac * np.exp2(1 - fmt.bias)
    values = sign * np.where(exp == 0, sub, normal)
    top = (1 << fmt.exponent_bits) - 1
    if fmt.ieee_specials:
        values = np.where((exp == top) & (man == 0), sign * np.inf, values)
        values = np.where((exp == top) & (man != 0), np.nan, values)
    else:
        values = np.where((exp == top) & (man == (1 << fmt.mantissa_bits) - 1), np.nan, values)
    with np.errstate(invalid="ignore"):
        return values.astype(np.float32)


def max_finite(dtype: str) -> float:
    """The largest finite value of a narrow format (``float8_e4m3`` -> 448.0)."""
    table = decode_table(dtype)
    return float(np.max(table[np.isfinite(table)]))


def decode(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Bits of a narrow format -> float32 values (same shape). Other types: ``raw`` as float
    values unchanged (``raw`` itself)."""
    if not is_narrow(dtype):
        return raw
    fmt = FORMATS[dtype]
    raw = np.ascontiguousarray(raw).view(fmt.storage)
    if dtype == "bfloat16":
        return (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return decode_table(dtype)[raw]


@functools.lru_cache(maxsize=None)
def _sorted_finite(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(finite values ascending, their codes), one code per value (+0 for zero)."""
    with np.errstate(invalid="ignore"):
        table = decode_table(dtype).astype(np.float64)
    codes = np.arange(table.size)
    keep = np.isfinite(table) & ~((table == 0) & (np.signbit(table)))
    values, codes = table[keep], codes[keep]
    order = np.argsort(values, kind="stable")
    return values[order], codes[order]


def _bf16_round(values: np.ndarray) -> np.ndarray:
    f = np.ascontiguousarray(values, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), np.uint16(0x7FC0), rounded)


def encode(values: np.ndarray, dtype: str) -> np.ndarray:
    """Float values -> bits of a narrow format, rounded to nearest, ties to even code; float8
    values beyond the largest finite one saturate to it, NaN becomes the format's NaN.
    bfloat16 rounds from float32 (values are first rounded to float32), like CUDA's
    ``__float2bfloat16_rn`` on a float argument."""
    fmt = FORMATS[dtype]
    v = np.asarray(values, dtype=np.float64)
    if dtype == "bfloat16":
        return _bf16_round(v.astype(np.float32))
    finite, codes = _sorted_finite(dtype)
    clipped = np.clip(np.nan_to_num(v, nan=0.0), finite[0], finite[-1])
    hi = np.clip(np.searchsorted(finite, clipped, side="left"), 1, finite.size - 1)
    lo = hi - 1
    d_lo, d_hi = clipped - finite[lo], finite[hi] - clipped
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (codes[hi] % 2 == 0))
    pick_hi |= clipped == finite[hi]
    out = np.where(pick_hi, codes[hi], codes[lo]).astype(fmt.storage)
    nan_code = (1 << (np.dtype(fmt.storage).itemsize * 8 - 1)) - 1  # 0x7F: NaN in both
    return np.where(np.isnan(v), np.array(nan_code, dtype=fmt.storage), out)


def codes_in_range(dtype: str, low: float, high: float) -> tuple[int, int]:
    """(smallest, largest) finite value of the format inside ``[low, high)``, as floats coded
    back in their format: the bounds a drawn input is clipped to. Raises ``ValueError`` when
    the range holds no value of the format."""
    finite, _ = _sorted_finite(dtype)
    inside = finite[(finite >= low) & (finite < high)]
    if inside.size == 0:
        raise ValueError(f"range [{low}, {high}) holds no finite {dtype} value")
    return float(inside[0]), float(inside[-1])
