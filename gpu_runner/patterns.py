"""Poison and guard bit patterns (no GPU needed).

Outputs are filled with a *poison* value before every launch so that an element the kernel
did not write is recognisable afterwards:

- floating-point outputs: every 16-bit half-word is ``0x7FFC``. As float16 that is ``0x7FFC``,
  as float32 ``0x7FFC7FFC``, as float64 ``0x7FFC7FFC7FFC7FFC``: a quiet NaN of each width
  (all exponent bits set, nonzero mantissa, IEEE 754-2008 section 3.4) whose payload differs
  from the canonical NaN CUDA arithmetic produces (``0x7FFF``, ``0x7FFFFFFF``,
  ``0x7FFFFFFFFFFFFFFF``), so a computed NaN is not mistaken for an unwritten element.
- integer outputs: every byte ``0x7F`` (int32 ``0x7F7F7F7F`` = 2139062143), far from the values
  random inputs in a spec's ranges produce.

- bfloat16 outputs: the float poison too (``0x7FFC`` is a quiet NaN in bfloat16: exponent all
  ones, significand ``1111100``). float8 outputs (``float8_e4m3``, ``float8_e5m2``): the byte
  ``0x7F``, a NaN in both formats (OCP OFP8 specification, table 1); it is also the NaN CUDA's
  conversions produce, so a computed NaN there reads as unwritten only if the baseline's
  element was not NaN too.

Both are one repeated word, so the device fills them with ``cuMemsetD16``/``cuMemsetD8``.

Guard regions around every buffer hold the byte ``GUARD_BYTE``; any other byte there after a
launch means the kernel wrote outside its buffer.
"""

from __future__ import annotations

import numpy as np

from gpu_runner import elements

FLOAT_POISON_HALFWORD = 0x7FFC
INT_POISON_BYTE = 0x7F
GUARD_BYTE = 0xA5
FLOAT_DTYPES = ("float16", "float32", "float64")


def is_float(dtype: str | np.dtype) -> bool:
    """Whether ``dtype`` (a numpy name such as ``"float32"``, or ``"bfloat16"``,
    ``"float8_e4m3"``, ``"float8_e5m2"``) is a floating-point type."""
    return elements.is_narrow(str(dtype)) or np.dtype(dtype).kind == "f"


def halfword_poison(dtype: str | np.dtype) -> bool:
    """Whether outputs of ``dtype`` get the 16-bit float poison (float16/32/64, bfloat16)
    rather than the byte ``INT_POISON_BYTE`` (integers and the float8 types)."""
    return is_float(dtype) and elements.itemsize(str(dtype)) >= 2


def bits_dtype(dtype: str | np.dtype) -> np.dtype:
    """The unsigned integer type of the same width, for bitwise comparisons."""
    return np.dtype(f"uint{elements.itemsize(str(dtype)) * 8}")


def poison_array(dtype: str, length: int) -> np.ndarray:
    """A host array of ``length`` poison elements of ``dtype`` (the bytes the device holds
    after poisoning; narrow floats as their storage integers)."""
    store = elements.storage_dtype(dtype)
    nbytes = store.itemsize * length
    if halfword_poison(dtype):
        raw = np.full(nbytes // 2, FLOAT_POISON_HALFWORD, dtype="<u2").view(np.uint8)
    else:
        raw = np.full(nbytes, INT_POISON_BYTE, dtype=np.uint8)
    return raw.view(store.newbyteorder("<")).astype(store, copy=False)


def poison_value(dtype: str):
    """The poison as one scalar of ``dtype`` (NaN for floats, e.g. 2139062143 for int32)."""
    return poison_array(dtype, 1)[0]


def poison_mask(values: np.ndarray, dtype: str | None = None) -> np.ndarray:
    """Boolean mask of the elements of ``values`` that hold the poison bit pattern exactly.
    ``dtype`` names the element type when ``values`` holds a narrow float's bits."""
    name = dtype or values.dtype.name
    bits = np.ascontiguousarray(values).view(bits_dtype(values.dtype))
    ref = poison_array(name, 1).view(bits_dtype(values.dtype))[0]
    return bits == ref
