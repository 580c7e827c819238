"""Element types: spec type names, C/CUDA type spellings, numpy dtype names, default ranges.

The spec type names and their numpy mapping are those of the harness spec format
(``float -> float32``, ``half -> float16``, ``int -> int32``, ``unsigned -> uint32``,
``size_t -> uint64``, ``long -> int64``, ``char -> int8``, ``bool -> uint8``). C type widths are
those of CUDA's LP64 data model on Linux (CUDA C++ Programming Guide, "Built-in Vector Types"
and the host ABI nvcc follows), where ``long`` is 64 bits.
"""

from __future__ import annotations

import re
from typing import Optional

# spec type name -> numpy dtype name
SPEC_TYPES: dict[str, str] = {
    "float": "float32", "double": "float64", "half": "float16",
    "int": "int32", "unsigned": "uint32", "size_t": "uint64", "long": "int64",
    "char": "int8", "bool": "uint8",
    **{n: n for n in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                      "float16", "float32", "float64")},
    # narrow floats (gpu_runner.elements): CUDA's __nv_bfloat16, __nv_fp8_e4m3, __nv_fp8_e5m2
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float8_e4m3": "float8_e4m3", "float8_e5m2": "float8_e5m2",
}
NARROW_FLOATS = ("bfloat16", "float8_e4m3", "float8_e5m2")  # numpy has none of them
_ITEMSIZE = {"bfloat16": 2, "float8_e4m3": 1, "float8_e5m2": 1}

# C spelling (qualifiers removed, ``std::`` dropped, single spaces) -> spec type name
_C_TYPES: dict[str, str] = {
    "float": "float", "double": "double", "half": "half", "__half": "half",
    "int": "int", "signed": "int", "signed int": "int", "int32_t": "int32",
    "unsigned": "unsigned", "unsigned int": "unsigned", "uint32_t": "uint32",
    # the short names <sys/types.h> gives (nvcc's host compiler includes it)
    "uint": "unsigned", "ulong": "uint64", "ushort": "uint16", "uchar": "uint8",
    "long": "long", "long int": "long", "signed long": "long", "signed long int": "long",
    "long long": "int64", "long long int": "int64", "signed long long": "int64",
    "signed long long int": "int64", "int64_t": "int64", "ptrdiff_t": "int64",
    "long64": "int64",
    "unsigned long": "uint64", "unsigned long int": "uint64", "unsigned long long": "uint64",
    "unsigned long long int": "uint64", "uint64_t": "uint64", "size_t": "size_t",
    "short": "int16", "short int": "int16", "signed short": "int16", "int16_t": "int16",
    "unsigned short": "uint16", "unsigned short int": "uint16", "uint16_t": "uint16",
    "char": "char", "signed char": "int8", "int8_t": "int8",
    "unsigned char": "uint8", "uint8_t": "uint8", "bool": "bool",
    "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16", "__bf16": "bfloat16",
    "__nv_fp8_e4m3": "float8_e4m3", "__nv_fp8_e5m2": "float8_e5m2",
    # glibc's <sys/types.h> names (which CUDA's headers pull in on Linux), and uchar as the
    # CUDA samples define it
    "uint": "unsigned", "ushort": "uint16", "ulong": "uint64", "uchar": "uint8",
}
# vector types whose lane type's name ends in digits (cuda_bf16.h, cuda_fp8.h)
_VECTOR_SPECIAL: dict[str, tuple[str, int]] = {
    "__nv_bfloat162": ("bfloat16", 2), "nv_bfloat162": ("bfloat16", 2),
    "__nv_fp8x2_e4m3": ("float8_e4m3", 2), "__nv_fp8x4_e4m3": ("float8_e4m3", 4),
    "__nv_fp8x2_e5m2": ("float8_e5m2", 2), "__nv_fp8x4_e5m2": ("float8_e5m2", 4),
}

# CUDA vector types: prefix -> spec type of one lane (``float4`` is four ``float``)
_VECTOR_BASES: dict[str, str] = {
    "float": "float", "double": "double", "int": "int", "uint": "unsigned",
    "char": "int8", "uchar": "uint8", "short": "int16", "ushort": "uint16",
    "long": "long", "ulong": "uint64", "longlong": "int64", "ulonglong": "uint64",
    "half": "half", "__half": "half",
}
_VECTOR_RE = re.compile(r"^(?P<base>[a-z_]+?)(?P<lanes>[1-4])$")

_UNSIGNED = {"uint8", "uint16", "uint32", "uint64"}
_BITS = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32,
         "int64": 64, "uint64": 64}


def normalize_c_type(ctype: str) -> str:
    """``"const  unsigned int"`` -> ``"unsigned int"``; drops qualifiers and ``std::``."""
    words = ctype.replace("std::", "").replace("*", " ").split()
    drop = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct"}
    return " ".join(w for w in words if w not in drop)


def spec_type_for_c(ctype: str) -> Optional[str]:
    """The spec type name for a scalar C type (``unsigned int`` -> ``unsigned``), or None."""
    return _C_TYPES.get(normalize_c_type(ctype))


def vector_type_for_c(ctype: str) -> Optional[tuple[str, int]]:
    """``float4`` -> ``("float", 4)``, ``__half2`` -> ``("half", 2)``; None if not a vector type."""
    name = normalize_c_type(ctype)
    if name in _VECTOR_SPECIAL:
        return _VECTOR_SPECIAL[name]
    m = _VECTOR_RE.match(name)
    if not m or m.group("base") not in _VECTOR_BASES:
        return None
    return _VECTOR_BASES[m.group("base")], int(m.group("lanes"))


def is_int_c_type(ctype: str) -> bool:
    """Whether ``ctype`` is a known integer (or bool) C type (``int``, ``size_t``, ...)."""
    st = spec_type_for_c(ctype)
    return st is not None and not is_float(st)


def numpy_dtype(spec_type: str) -> str:
    """The numpy name of a spec type (``float`` -> ``float32``). Raises KeyError if unknown."""
    return SPEC_TYPES[spec_type]


def is_float(spec_type: str) -> bool:
    """Whether a spec type is a floating-point type (``bf16`` is). KeyError if unknown."""
    return is_float_dtype(SPEC_TYPES[spec_type])


def is_float_dtype(dtype: str) -> bool:
    """Whether a numpy dtype name of ``SPEC_TYPES`` (or a narrow float's) is floating-point."""
    return dtype.startswith("float") or dtype in NARROW_FLOATS


def default_range(spec_type: str) -> tuple[int | float, int | float]:
    """Input values are drawn from ``[low, high)``: floats [-1, 1), signed ints [-100, 100),
    unsigned ints [0, 100) (the spec format's defaults); ``bool`` [0, 2), since a C++ ``bool``
    holding anything but 0 or 1 is undefined behaviour."""
    if spec_type == "bool":
        return (0, 2)
    dtype = SPEC_TYPES[spec_type]
    if is_float_dtype(dtype):
        return (-1.0, 1.0)
    return (0, 100) if dtype in _UNSIGNED else (-100, 100)


def int_limits(dtype: str) -> tuple[int, int]:
    """Smallest and largest value of an integer numpy dtype (``int8`` -> (-128, 127))."""
    bits = _BITS[dtype]
    if dtype in _UNSIGNED:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def itemsize(dtype: str) -> int:
    """Bytes per element of a numpy dtype name of ``SPEC_TYPES`` (``float16`` -> 2,
    ``uint64`` -> 8): its bit count over 8.

    Raises:
        ValueError: ``dtype`` names no bit count.
    """
    if dtype in _ITEMSIZE:
        return _ITEMSIZE[dtype]
    m = re.search(r"(\d+)$", dtype)
    if m is None:
        raise ValueError(f"expected a numpy dtype name with a bit count, found {dtype!r}")
    return int(m.group(1)) // 8
