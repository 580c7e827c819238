"""The keys results are stored under: what a measurement depends on, hashed.

A kernel's measurement depends on the kernel's own definition, on everything else in its
translation unit that the definition can see (includes, macros, ``__device__`` helpers,
constants), on its harness spec (sizes, inputs, launch configuration), on the compile flags
and on the device. It does not depend on the *other* ``__global__`` kernels of the same file:
the runner launches only this one. So the source part of the key is the file text with the
other kernels' definitions cut out: editing one kernel marks only its own results stale.

``source_materials`` computes that for every kernel of a file in one pass (the text outside
all kernels is hashed once, each kernel adds its own text and its place in it), with
whitespace runs collapsed (``normalize_space``): re-indenting or adding blank lines changes
what the compiler sees only in line numbers, so it does not make results stale.

Headers the file includes are not hashed (their text is not read); a header edit is caught by
the file watcher, which re-checks the files, but old results stay current. That is a known
limit, said where results are shown.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

from gpu_runner.report import DeviceInfo
from cudalens.source.model import Kernel, SourceFile

# Bump when the meaning of a key changes, so old results stop matching instead of lying.
KEY_VERSION = "cudalens-results-1"


def sha256_text(text: str) -> str:
    """Hex sha256 of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def kernel_context(source: SourceFile, kernel: Kernel) -> str:
    """``source``'s text without the definitions of its kernels other than ``kernel``.

    Each other kernel's definition is cut out together with the blank space around it, and a
    single newline left in its place, so that adding, removing or editing another kernel
    (and the blank lines that separate it) leaves the result unchanged. ``kernel`` must be one
    of ``source.kernels`` (compared by byte range); offsets are into
    ``source.text.encode("utf-8")``.
    """
    data = source.text.encode("utf-8")
    pieces: list[bytes] = []
    at = 0
    for other in source.kernels:
        if (other.start_byte, other.end_byte) == (kernel.start_byte, kernel.end_byte):
            continue
        if other.start_byte < at:  # nested or overlapping ranges (recovered parses): skip
            continue
        start, end = other.start_byte, other.end_byte
        while start > at and data[start - 1:start] in _BLANK:
            start -= 1
        while end < len(data) and data[end:end + 1] in _BLANK:
            end += 1
        pieces.append(data[at:start] + b"\n")
        at = end
    pieces.append(data[at:])
    return b"".join(pieces).decode("utf-8", errors="surrogateescape")


_BLANK = (b" ", b"\t", b"\r", b"\n")


_NEWLINE_RUN = re.compile(r"[ \t\r\f\v]*\n\s*")
_SPACE_RUN = re.compile(r"[ \t\r\f\v]+")


def normalize_space(text: str) -> str:
    """``text`` with each run of whitespace holding a newline made one newline, other runs
    one space, and the ends stripped (newlines are kept: they end preprocessor lines)."""
    return _SPACE_RUN.sub(" ", _NEWLINE_RUN.sub("\n", text)).strip()


def source_materials(source: SourceFile, specs: Mapping[tuple[int, int], str],
                     flags: Sequence[str]) -> dict[tuple[int, int], str]:
    """``material_key`` digests for the kernels of ``source`` that have a spec.

    ``specs`` maps a kernel's byte range ``(start_byte, end_byte)`` to its spec identity text.
    A kernel's digest covers the text outside every kernel (normalized, joined by newlines:
    adding or removing another kernel leaves it unchanged), the kernel's place in that text
    (a character offset), its own text (normalized), its qualified name, the spec text and
    ``flags``. Cost: one pass over the file plus each kernel's own text.
    """
    data = source.text.encode("utf-8")
    outside: list[str] = []
    length = 0
    places: list[tuple[object, int]] = []
    at = 0
    for k in sorted(source.kernels, key=lambda k: k.start_byte):
        if k.start_byte < at:  # nested or overlapping ranges (recovered parses): skip
            continue
        piece = normalize_space(data[at:k.start_byte].decode("utf-8", "replace"))
        if piece:
            outside.append(piece)
            length += len(piece) + (1 if len(outside) > 1 else 0)
        places.append((k, length))
        at = k.end_byte
    piece = normalize_space(data[at:].decode("utf-8", "replace"))
    if piece:
        outside.append(piece)
    whole = hashlib.sha256("\n".join(outside).encode("utf-8")).hexdigest()
    out: dict[tuple[int, int], str] = {}
    for k, place in places:
        spec = specs.get((k.start_byte, k.end_byte))
        if spec is None:
            continue
        own = normalize_space(data[k.start_byte:k.end_byte].decode("utf-8", "replace"))
        out[(k.start_byte, k.end_byte)] = material_key(f"{whole}\0{place}\0{own}",
                                                       k.qualified_name, spec, flags)
    return out


def device_id(device: DeviceInfo) -> str:
    """What identifies a GPU for timing purposes: name, compute capability and SM count
    (``NVIDIA H200/sm_90/132``). The driver version is left out on purpose: a driver update
    does not make a measurement of the same kernel on the same GPU a different fact."""
    major, minor = device.compute_capability
    return f"{device.name}/sm_{major}{minor}/{device.sm_count}"


def material_key(context: str, kernel_name: str, spec_text: str,
                 flags: Sequence[str]) -> str:
    """Hex sha256 of everything in a key except the device (see ``result_key``)."""
    h = hashlib.sha256()
    for part in (KEY_VERSION, kernel_name, context, spec_text, "\x1f".join(flags)):
        data = part.encode("utf-8", errors="surrogateescape")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def result_key(material: str, device: str) -> str:
    """The store key: hex sha256 of ``material_key(...)`` and ``device_id(...)``."""
    return hashlib.sha256(f"{material}\0{device}".encode("utf-8")).hexdigest()
