"""Kernel symbols in a cubin (no GPU needed).

A cubin is an ELF64 little-endian object (``nvcc -cubin``). Its symbol table (the section of
type ``SHT_SYMTAB``) lists every function as ``STT_FUNC``; kernels (``__global__`` entry points)
carry the flag ``0x10`` in ``st_other``, which NVIDIA's tools print as ``STO_ENTRY``; non-inlined
``__device__`` functions are ``STT_FUNC`` without it. Layouts follow the System V ABI's ELF-64
object file format (ELF header 64 bytes, section header 64 bytes, symbol 24 bytes); the entry
flag was read off ``nvcc 13.0 -cubin -arch=sm_90`` output with ``readelf -s``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from gpu_runner.symbols import base_name, demangle, matches

SHT_SYMTAB = 2
STT_FUNC = 2
STO_CUDA_ENTRY = 0x10

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")  # e_ident .. e_shstrndx
_SHDR = struct.Struct("<IIQQQQIIQQ")  # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, ...
_SYM = struct.Struct("<IBBHQQ")  # st_name, st_info, st_other, st_shndx, st_value, st_size


class CubinError(ValueError):
    """The bytes are not a cubin this module can read (not ELF64 little-endian, truncated)."""


class KernelNotFoundError(LookupError):
    """No kernel (or more than one) in the cubin matches the requested name.

    ``found`` lists the kernels that are there, as ``KernelSymbol``s.
    """

    def __init__(self, message: str, found: tuple["KernelSymbol", ...]):
        super().__init__(message)
        self.found = found


@dataclass(frozen=True)
class KernelSymbol:
    """A function symbol: ``symbol`` as stored (mangled), ``name`` its C++ name
    (``ops::scale<float>``), ``size`` the machine code's length in bytes, ``entry`` whether it is
    a kernel (``__global__``) rather than a device function."""

    symbol: str
    name: str
    size: int
    entry: bool


def _cstr(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    if end < 0:
        end = len(table)
    return table[offset:end].decode("utf-8", "replace")


def list_functions(cubin: bytes) -> tuple[KernelSymbol, ...]:
    """Every ``STT_FUNC`` symbol of the cubin, kernels and device functions, in table order.

    Raises ``CubinError`` when ``cubin`` is not an ELF64 little-endian object or a header
    points outside it.
    """
    data = bytes(cubin)
    if len(data) < _EHDR.size or data[:4] != b"\x7fELF":
        raise CubinError(f"expected an ELF cubin (starting with b'\\x7fELF'), "
                         f"found {data[:4]!r} in {len(data)} bytes")
    if data[4] != 2 or data[5] != 1:
        raise CubinError(f"expected a 64-bit little-endian ELF (class 2, data 1), "
                         f"found class {data[4]}, data {data[5]}")
    fields = _EHDR.unpack_from(data, 0)
    e_shoff, e_shentsize, e_shnum = fields[6], fields[11], fields[12]
    if e_shentsize != _SHDR.size:
        raise CubinError(f"expected section headers of {_SHDR.size} bytes, found {e_shentsize}")
    if e_shoff + e_shnum * e_shentsize > len(data):
        raise CubinError(f"section headers at offset {e_shoff} ({e_shnum} of them) run past "
                         f"the end of the {len(data)}-byte cubin")
    sections = [_SHDR.unpack_from(data, e_shoff + i * e_shentsize) for i in range(e_shnum)]

    def body(index: int) -> bytes:
        sh = sections[index]
        offset, size = sh[4], sh[5]
        if offset + size > len(data):
            raise CubinError(f"section {index} (offset {offset}, {size} bytes) runs past the "
                             f"end of the {len(data)}-byte cubin")
        return data[offset:offset + size]

    out: list[KernelSymbol] = []
    for sh in sections:
        if sh[1] != SHT_SYMTAB:
            continue
        link, entsize = sh[6], sh[9] or _SYM.size
        if link >= len(sections):
            raise CubinError(f"symbol table links to string table {link}, "
                             f"but the cubin has {len(sections)} sections")
        strtab = body(link)
        table = body(sections.index(sh))
        for off in range(0, len(table) - _SYM.size + 1, entsize):
            st_name, st_info, st_other, _shndx, _value, st_size = _SYM.unpack_from(table, off)
            if st_info & 0xF != STT_FUNC:
                continue
            symbol = _cstr(strtab, st_name)
            out.append(KernelSymbol(symbol=symbol, name=base_name(demangle(symbol)),
                                    size=st_size, entry=bool(st_other & STO_CUDA_ENTRY)))
    return tuple(out)


def list_kernels(cubin: bytes) -> tuple[KernelSymbol, ...]:
    """The kernels (``__global__`` functions) of the cubin, in symbol-table order."""
    return tuple(s for s in list_functions(cubin) if s.entry)


def find_kernel_symbol(cubin: bytes, name: str) -> str:
    """The mangled symbol of the kernel called ``name`` (``saxpy``, ``ops::saxpy``,
    ``scale<float>``), matched with ``symbols.matches``.

    Raises ``KernelNotFoundError`` naming the kernels found when none matches, or the matching
    ones when a plain name matches several (e.g. two template instances), and ``CubinError``
    for unreadable input.
    """
    kernels = list_kernels(cubin)
    hits = [k for k in kernels if matches(k.symbol, name)]
    if len(hits) == 1:
        return hits[0].symbol
    if not hits:
        listed = ", ".join(f"{k.name} ({k.symbol})" for k in kernels) or "none"
        raise KernelNotFoundError(
            f"kernel '{name}' not found in the compiled cubin; kernels found: {listed}", kernels)
    listed = ", ".join(f"{k.name} ({k.symbol})" for k in hits)
    raise KernelNotFoundError(
        f"kernel name '{name}' is ambiguous in the compiled cubin: it matches {listed}; "
        f"name the one to run (e.g. '{hits[0].name}')", kernels)
