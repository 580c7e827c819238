"""Snapshots of CUDA documents: the parsed kernels of one text at one version, with specs.

A ``DocumentSnapshot`` is immutable: background work (nvcc, optimization) runs on a
snapshot while the editor moves on; results are later matched against the document's current
snapshot by version and by the store key of each kernel. Analysis is done on every change
and kept cheap: an ``IncrementalParser`` per document re-parses only around the edit and
re-reads only the declarations it touched, and ``SpecCache`` redoes spec work (loading,
inferring, the identity text) only for kernels whose text or launches changed. Inferring a
changed kernel's spec reads the parser's tree (``kernel_model.syntax.remember``) instead of
parsing the file again, whole-file scans are made once per text, and the store keys'
normalized pieces are cached by their text (``MaterialCache``); each gives what the plain
path gives (``tests/test_analysis_fast_paths.py``).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable, Optional

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from cudalens.errors import CudalensError
from cudalens.kernel_model.syntax import remember
from cudalens.lsp.positions import LineIndex, contains
from cudalens.source.incremental import IncrementalParser
from cudalens.source.model import Kernel, SourceFile
from cudalens.source.parser import parse_source
from cudalens.spec.infer import outside_inputs
from cudalens.spec.model import KernelSpec
from cudalens.spec.parser import spec_path_for
from cudalens.spec.writer import format_spec
from cudalens.store.keys import MaterialCache, sha256_text, source_materials
from cudalens.target import FileContext, Target, file_context, load_spec
from cudalens.textfile import to_bytes

CUDA_SUFFIXES = (".cu", ".cuh")

# Documents larger than this (UTF-8 bytes) are not analyzed: analysis runs on the server's
# event loop and takes about a second per megabyte of ordinary CUDA (more when the file is
# dense with kernels), which would hold up every other document's requests meanwhile.
MAX_ANALYZED_BYTES = 1_000_000

# Compile flags that are part of a measurement's identity: the runner compiles the baseline
# with no extra options today (``gpu_runner.compiler``); bump this with them.
RUNNER_FLAGS: tuple[str, ...] = ()


def oversized(text: str) -> Optional[int]:
    """The UTF-8 size of ``text`` in bytes when it is above ``MAX_ANALYZED_BYTES``, else None
    (a text of at most a quarter of the limit in characters is not encoded to tell)."""
    if len(text) * 4 <= MAX_ANALYZED_BYTES:
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > MAX_ANALYZED_BYTES else None


@dataclass(frozen=True)
class KernelView:
    """One kernel of a snapshot with its spec.

    spec: the written spec when the sidecar file names the kernel, else a draft inferred
        from the source; None when neither is possible (``spec_error`` says why).
    spec_origin: the spec file's path or ``"inferred"``; ``""`` without a spec.
    material: ``material_key`` of the kernel's context, spec and runner flags ("" without
        a spec): with a device it gives the store key.
    """

    kernel: Kernel
    spec: Optional[KernelSpec]
    spec_origin: str
    spec_error: str
    material: str

    @property
    def name(self) -> str:
        return self.kernel.qualified_name


@dataclass(frozen=True)
class DocumentSnapshot:
    uri: str
    path: Path  # absolute
    version: Optional[int]  # None for a file read from disk
    text: str
    source: SourceFile
    index: LineIndex
    kernels: tuple[KernelView, ...]
    # what is read around the file (``target.file_context``), read on first call; None: not
    # known (a snapshot made elsewhere)
    around: Optional[Callable[[], object]] = field(default=None, compare=False, repr=False)

    @property
    def header_macros(self):
        """The macros of the file's headers and build (``target.FileContext.macros``) that
        the passes expand, or None."""
        return self.around().macros if self.around is not None else None

    @property
    def sha(self) -> str:
        return sha256_text(self.text)

    @cached_property
    def data(self) -> bytes:
        """``text`` as UTF-8 (the source model's byte offsets index this), encoded once."""
        return to_bytes(self.text)

    def kernel(self, name: str) -> KernelView:
        """The kernel called ``name`` (plain or qualified).

        Raises:
            KeyError: the document has no such kernel (the message lists the kernels).
        """
        for view in self.kernels:
            if name in (view.kernel.name, view.kernel.qualified_name):
                return view
        found = ", ".join(v.name for v in self.kernels) or "none"
        raise KeyError(f"{self.path.name} has no __global__ kernel {name!r} (kernels: {found})")

    def kernel_at(self, position: types.Position) -> Optional[KernelView]:
        """The kernel whose definition contains ``position``, if any."""
        for view in self.kernels:
            if contains(self.index.range(view.kernel.range), position):
                return view
        return None

    def name_range(self, view: KernelView) -> types.Range:
        return self.index.range(view.kernel.name_range)

    def signature_end(self, view: KernelView) -> types.Position:
        """Just after the signature's last non-blank character before the body's ``{``.

        Costs the blank space walked over, not the file: the line is counted back from the
        body's line."""
        data = self.data
        kernel = view.kernel
        end = kernel.body_start_byte
        line = kernel.body_range.start.line
        while end > kernel.start_byte and data[end - 1:end] in (b" ", b"\t", b"\n", b"\r"):
            end -= 1
            if data[end:end + 1] == b"\n":
                line -= 1
        column = end - (data.rfind(b"\n", 0, end) + 1)
        return self.index.from_byte(line, column)

    def signature_lines(self, view: KernelView) -> tuple[int, int]:
        """Zero-based first and last line a kernel's signature can reach (its definition's
        first line to its body's ``{``): a cheap filter before exact positions."""
        kernel = view.kernel
        return kernel.range.start.line, kernel.body_range.start.line

    def target(self, view: KernelView) -> Target:
        """The optimize flow's input for ``view`` in this snapshot.

        Raises:
            CudalensError: the kernel has no usable spec (the message says why).
        """
        if view.spec is None:
            raise CudalensError(view.spec_error)
        return Target(path=self.path, text=self.text, source=self.source, kernel=view.kernel,
                      spec=view.spec, spec_origin=view.spec_origin,
                      around=self.around() if self.around is not None else None)


def is_cuda_path(path: Path) -> bool:
    return path.suffix in CUDA_SUFFIXES


def uri_to_path(uri: str) -> Optional[Path]:
    """The absolute file path of a ``file:`` URI, None for other schemes."""
    fs = to_fs_path(uri) if uri.startswith("file:") else None
    return Path(fs).resolve() if fs else None


def path_to_uri(path: Path) -> str:
    return from_fs_path(str(path)) or path.as_uri()


class SpecCache:
    """Specs of kernels as last loaded or inferred, so that re-analyzing a large file after a
    keystroke redoes the spec work only for the kernels that changed.

    Keyed by the file, the kernel's name and text, the texts of its launch sites (inference
    reads them), what inference reads elsewhere in the file (``infer.outside_inputs``: record
    types, named block constants), the spec file's modification time and size, and for a file
    that launches nothing the texts of the files of its folder including it (its draft reads
    their launch sites: ``target.host_files``; read from disk when analyzed). At most
    ``size`` entries, least recently used dropped first. Line numbers are not in the key: an
    error (which names the kernel's line) is worked out again when the kernel has moved, but a
    cached draft's notes may name the line a launch site or an access was on before.
    """

    def __init__(self, size: int = 4096):
        self.size = size
        # normalized pieces and material keys of recent texts (``source_materials``)
        self.materials = MaterialCache()
        # key -> ((spec, origin, error, identity), the kernel's first line then)
        self._entries: OrderedDict[
            tuple, tuple[tuple[Optional[KernelSpec], str, str, str], int]] = OrderedDict()

    def get(self, path: Path, source: SourceFile, kernel: Kernel,
            spec_stat: Optional[tuple[int, int]], data: Optional[bytes] = None,
            around: Optional[Callable[[], FileContext]] = None
            ) -> tuple[Optional[KernelSpec], str, str, str]:
        """``(spec, origin, error, identity)`` of ``kernel``: see ``KernelView`` for the first
        three; ``identity`` is ``spec_identity(spec)`` ("" without a spec). ``data`` is
        ``source.text`` as UTF-8 when the caller has it (else it is encoded here); ``around``
        gives the file's ``target.FileContext`` (headers, build defines) when a kernel's spec
        must be loaded, the same for every kernel of the text (else it is read per kernel)."""
        data = to_bytes(source.text) if data is None else data
        # a file launching nothing is drafted from the files including it (``target.load_spec``):
        # their texts are in the key, so editing one refreshes the draft
        hosts = tuple((str(h.path), h.text) for h in around().hosts) \
            if around is not None and not source.launch_sites else ()
        key = (str(path), kernel.qualified_name, data[kernel.start_byte:kernel.end_byte],
               tuple((s.config, s.arguments) for s in kernel.launch_sites), spec_stat,
               outside_inputs(kernel, source.text), hosts)
        line = kernel.range.start.line
        hit = self._entries.get(key)
        # an error names the kernel's line: one cached where the kernel was is not reused
        if hit is not None and (not hit[0][2] or hit[1] == line):
            self._entries.move_to_end(key)
            return hit[0]
        try:
            spec, origin = load_spec(path, source, kernel,
                                     around=around() if around is not None else None)
            value: tuple[Optional[KernelSpec], str, str, str] = (spec, origin, "",
                                                                 spec_identity(spec))
        except CudalensError as exc:
            value = (None, "", str(exc), "")
        self._entries[key] = (value, line)
        self._entries.move_to_end(key)
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return value


def _stat(path: Path) -> Optional[tuple[int, int]]:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def analyze(uri: str, path: Path, version: Optional[int], text: str, encoding: str,
            specs: Optional[SpecCache] = None,
            parser: Optional[IncrementalParser] = None) -> DocumentSnapshot:
    """Parses ``text`` (the contents of ``path`` at ``version``) and loads each kernel's spec
    (through ``specs`` when given). ``parser`` is the document's incremental parser, when
    the caller keeps one (it gives what ``parse_source`` gives, faster after small edits).

    Never raises for bad source or specs: a spec problem is kept in ``KernelView.spec_error``.
    """
    source = parser.parse(text, str(path)) if parser is not None else parse_source(text, str(path))
    data = to_bytes(text)
    cache = specs or SpecCache()
    if parser is not None:
        _share_tree(text, data, parser)
    spec_stat = _stat(spec_path_for(path))
    around = functools.cache(lambda: file_context(path, text))  # read once, if a spec is loaded
    loaded = {}
    for kernel in source.kernels:
        loaded[(kernel.start_byte, kernel.end_byte)] = cache.get(path, source, kernel, spec_stat,
                                                                 data, around)
    identities = {span: identity for span, (spec, _, _, identity) in loaded.items()
                  if spec is not None}
    materials = source_materials(source, identities, RUNNER_FLAGS, cache.materials)
    views = []
    for kernel in source.kernels:
        span = (kernel.start_byte, kernel.end_byte)
        spec, origin, error, _ = loaded[span]
        views.append(KernelView(kernel=kernel, spec=spec, spec_origin=origin, spec_error=error,
                                material=materials.get(span, "")))
    snapshot = DocumentSnapshot(uri=uri, path=path, version=version, text=text, source=source,
                                index=LineIndex(text, encoding), kernels=tuple(views),
                                around=around)
    snapshot.__dict__["data"] = data  # the cached_property, filled with what we have
    return snapshot


def _share_tree(text: str, data: bytes, parser: IncrementalParser) -> None:
    """Gives spec inference (``kernel_model.syntax.parse``) the document's incremental tree of
    ``text`` so that inferring an edited kernel's spec does not parse the whole file again.
    Only a tree without errors: tree-sitter's error recovery may differ between an incremental
    and a full parse, and inference must see what a full parse gives (then it parses the text
    itself)."""
    tree = parser.last_tree()
    if tree is not None and not tree.root_node.has_error:
        remember(text, tree, data)


def spec_identity(spec: KernelSpec) -> str:
    """The part of a spec that a measurement depends on: its text as the writer prints it,
    without the notes (comments) and without the file it came from."""
    from dataclasses import replace

    return format_spec(replace(spec, notes=(), source="", line=0))
