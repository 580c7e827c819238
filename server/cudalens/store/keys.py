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
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Optional

from gpu_runner.report import DeviceInfo
from cudalens.source.model import Kernel, SourceFile
from cudalens.textfile import from_bytes, to_bytes

# Bump when the meaning of a key changes, so old results stop matching instead of lying.
KEY_VERSION = "cudalens-results-1"


def sha256_text(text: str) -> str:
    """Hex sha256 of ``text`` encoded as UTF-8 (escaped bytes as themselves: ``to_bytes``)."""
    return hashlib.sha256(to_bytes(text)).hexdigest()


def kernel_context(source: SourceFile, kernel: Kernel) -> str:
    """``source``'s text without the definitions of its kernels other than ``kernel``.

    Each other kernel's definition is cut out together with the blank space around it, and a
    single newline left in its place, so that adding, removing or editing another kernel
    (and the blank lines that separate it) leaves the result unchanged. ``kernel`` must be one
    of ``source.kernels`` (compared by byte range); offsets are into
    ``source.text.encode("utf-8")``.
    """
    data = to_bytes(source.text)
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
    return from_bytes(b"".join(pieces))


_BLANK = (b" ", b"\t", b"\r", b"\n")


_NEWLINE_RUN = re.compile(r"[ \t\r\f\v]*\n\s*")
_SPACE_RUN = re.compile(r"[ \t\r\f\v]+")


def normalize_space(text: str) -> str:
    """``text`` with each run of whitespace holding a newline made one newline, other runs
    one space, and the ends stripped (newlines are kept: they end preprocessor lines)."""
    return _SPACE_RUN.sub(" ", _NEWLINE_RUN.sub("\n", text)).strip()


class MaterialCache:
    """What ``source_materials`` computed for recent texts, so that re-keying a large file
    after a keystroke normalizes only the pieces the edit touched: each piece of text (the
    text between two kernels, a kernel's own text) is normalized once, by its bytes, and each
    ``material_key`` is computed once for its inputs. Results are the same with or without it.

    At most ``size`` entries of each kind, least recently used dropped first (the default
    holds every piece of a few 10,000-line files). Not thread-safe: one per thread, as the
    language server's analysis, which runs on its event loop, keeps one.
    """

    def __init__(self, size: int = 16384) -> None:
        self.size = size
        self._normalized: OrderedDict[bytes, str] = OrderedDict()
        self._keys: OrderedDict[tuple[str, ...], str] = OrderedDict()

    def normalized(self, piece: bytes) -> str:
        """``normalize_space`` of ``piece`` decoded from UTF-8 (bad bytes replaced)."""
        hit = self._normalized.get(piece)
        if hit is None:
            hit = normalize_space(piece.decode("utf-8", "replace"))
            self._normalized[piece] = hit
            if len(self._normalized) > self.size:
                self._normalized.popitem(last=False)
        else:
            self._normalized.move_to_end(piece)
        return hit

    def material(self, whole: str, place: int, own: str, kernel_name: str, spec_text: str,
                 flags: Sequence[str]) -> str:
        """``material_key(f"{whole}\\0{place}\\0{own}", kernel_name, spec_text, flags)``."""
        key = (whole, str(place), own, kernel_name, spec_text, "\x1f".join(flags))
        hit = self._keys.get(key)
        if hit is None:
            hit = material_key(f"{whole}\0{place}\0{own}", kernel_name, spec_text, flags)
            self._keys[key] = hit
            if len(self._keys) > self.size:
                self._keys.popitem(last=False)
        else:
            self._keys.move_to_end(key)
        return hit


def source_materials(source: SourceFile, specs: Mapping[tuple[int, int], str],
                     flags: Sequence[str], cache: Optional[MaterialCache] = None
                     ) -> dict[tuple[int, int], str]:
    """``material_key`` digests for the kernels of ``source`` that have a spec.

    ``specs`` maps a kernel's byte range ``(start_byte, end_byte)`` to its spec identity text.
    A kernel's digest covers the text outside every kernel (normalized, joined by newlines:
    adding or removing another kernel leaves it unchanged), the kernel's place in that text
    (a character offset), its own text (normalized), its qualified name, the spec text and
    ``flags``. Cost: one pass over the file plus each kernel's own text; with ``cache`` (kept
    from one version of the text to the next), only the pieces not seen before are
    normalized and only the keys with new inputs hashed.
    """
    data = to_bytes(source.text)
    cache = cache if cache is not None else MaterialCache()
    outside: list[str] = []
    length = 0
    places: list[tuple[Kernel, int]] = []
    at = 0
    for k in sorted(source.kernels, key=lambda k: k.start_byte):
        if k.start_byte < at:  # nested or overlapping ranges (recovered parses): skip
            continue
        piece = cache.normalized(data[at:k.start_byte])
        if piece:
            outside.append(piece)
            length += len(piece) + (1 if len(outside) > 1 else 0)
        places.append((k, length))
        at = k.end_byte
    piece = cache.normalized(data[at:])
    if piece:
        outside.append(piece)
    whole = hashlib.sha256("\n".join(outside).encode("utf-8")).hexdigest()
    out: dict[tuple[int, int], str] = {}
    for k, place in places:
        spec = specs.get((k.start_byte, k.end_byte))
        if spec is None:
            continue
        own = cache.normalized(data[k.start_byte:k.end_byte])
        out[(k.start_byte, k.end_byte)] = cache.material(whole, place, own, k.qualified_name,
                                                         spec, flags)
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
        data = to_bytes(part)
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def result_key(material: str, device: str) -> str:
    """The store key: hex sha256 of ``material_key(...)`` and ``device_id(...)``."""
    return hashlib.sha256(f"{material}\0{device}".encode("utf-8")).hexdigest()
