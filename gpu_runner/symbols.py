"""Kernel symbols: demangling C++ names (no GPU needed).

Demangling uses the Itanium C++ ABI demangler that every Linux C++ runtime exports
(``__cxa_demangle`` in libstdc++), which is also the scheme nvcc uses for device symbols.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re


@functools.lru_cache(maxsize=1)
def _cxa_demangle():
    for name in (ctypes.util.find_library("stdc++"), "libstdc++.so.6", "libc++.so.1"):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        fn = getattr(lib, "__cxa_demangle", None)
        if fn is not None:
            fn.restype = ctypes.c_void_p
            fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.POINTER(ctypes.c_int)]
            return fn
    return None


@functools.lru_cache(maxsize=4096)
def demangle(symbol: str) -> str:
    """``_Z5saxpyifPKfPf`` -> ``saxpy(int, float, float const*, float*)``.

    Names that are not mangled (``extern "C"`` kernels) and names the demangler rejects are
    returned unchanged.
    """
    if not symbol.startswith("_Z"):
        return symbol
    fn = _cxa_demangle()
    if fn is None:
        return symbol
    status = ctypes.c_int(0)
    ptr = fn(symbol.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not ptr:
        return symbol
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        ctypes.CDLL(None).free(ctypes.c_void_p(ptr))


def base_name(demangled: str) -> str:
    """The function's qualified name without return type and parameters.

    ``void scale<float>(float*, int)`` -> ``scale<float>``; ``ops::saxpy(int)`` -> ``ops::saxpy``.
    """
    depth = 0
    cut = len(demangled)
    for i, ch in enumerate(demangled):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    head = demangled[:cut].strip()
    # A template function's demangled name starts with its return type: drop it.
    depth = 0
    for i in range(len(head) - 1, -1, -1):
        ch = head[i]
        if ch == ">":
            depth += 1
        elif ch == "<":
            depth -= 1
        elif ch == " " and depth == 0:
            return head[i + 1:]
    return head


def unqualified(name: str) -> str:
    """``ops::scale<float>`` -> ``scale``."""
    depth = 0
    cut = len(name)
    for i, ch in enumerate(name):
        if ch == "<":
            if depth == 0:
                cut = min(cut, i)
            depth += 1
        elif ch == ">":
            depth -= 1
    head = name[:cut]
    return head.rsplit("::", 1)[-1]


def _instance_key(name: str) -> str:
    """A template instance's name without spaces and integer-literal suffixes: the demangler
    writes ``f<256u>`` for ``f<256>`` with an unsigned parameter, ``f<(short)3>`` for a short
    one is left as it is. ``f< float, 256u >`` -> ``f<float,256>``."""
    text = re.sub(r"\s+", "", name)
    return re.sub(r"(?<![\w.])(\d+)(?:ull|ul|ll|u|l)\b", r"\1", text, flags=re.I)


def matches(symbol: str, kernel_name: str) -> bool:
    """Whether a (mangled) symbol is the kernel ``kernel_name``.

    ``kernel_name`` may be plain (``saxpy``), qualified (``ops::saxpy``) or a template
    instance (``scale<float>``); plain names match any namespace and template arguments.
    """
    full = base_name(demangle(symbol))
    if full == kernel_name:
        return True
    if "<" in kernel_name:
        want = _instance_key(kernel_name)
        return _instance_key(full) == want or _instance_key(full.rsplit("::", 1)[-1]) == want
    if "::" in kernel_name:
        return unqualified(full) == unqualified(kernel_name) and full.split("<")[0] == kernel_name
    return unqualified(full) == kernel_name
