"""Parsing successive versions of one document fast: the language server re-analyzes a file
after every keystroke, and a 10,000-line file must not cost a full parse each time.

``IncrementalParser.parse(text, path)`` returns exactly what ``parse_source(text, path)``
returns (``tests/test_source_incremental.py`` compares them over many edits), but:

1. **The tree is reused.** The edit between the previous text and this one is found as the
   common prefix and suffix of their UTF-8 bytes (one edit, whatever the client sent), given
   to the previous tree with ``Tree.edit``, and tree-sitter re-parses only around it
   (tree-sitter's incremental parsing: ``Parser.parse(new, old_tree)``).
2. **Unchanged declarations are not walked again.** When the tree has no errors, the file is
   cut into *chunks*: the top-level declarations, looking through ``namespace`` and
   ``extern "C" { }`` bodies. The kernels and launch sites found in a chunk are cached by the
   chunk's bytes, its starting column and the containers around it (namespace names and
   linkage strings, which a kernel's qualified name and ``extern_c`` depend on); a chunk seen
   before is only moved to its new line and byte offset (``shift_kernel``). Only the edited
   chunk is queried and turned into ``Kernel`` records. The cache keeps the chunks of the last
   parse.

A tree with errors takes ``parse_source``'s own path (error ranges, re-parsing suspect kernels
one by one) on the incrementally parsed tree. Not thread-safe: one parser per document,
used from one thread.

``derived_source(text, path, base)`` does the same for the optimizer's candidates, texts
derived from ``base``'s by rewriting one kernel (``PassContext.rewritten``): the tree is
``base``'s re-parsed around the rewrite (``syntax.parse_near``) and the chunks come from one
store shared by all derived texts (``DERIVED_CHUNKS``), so a plan over a file of 3,000
kernels reads the other kernels once, not once per candidate.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Iterator, Optional

import tree_sitter

from .kernels import GLOBAL, enclosing_scope, global_token, kernel_from_definition
from .launches import LaunchIndex, launch_site_from_call
from .model import Kernel, LaunchSite, Position, Range, SourceFile
from .parser import parse_tree
from cudalens.kernel_model.syntax import captures_outside_tables, new_parser, parse, parse_near, text_of
from cudalens.kernel_model.text_diff import edit_between
from cudalens.textfile import to_bytes

_GLOBAL_QUERY = f'"{GLOBAL}" @keyword'
_LAUNCH_QUERY = "(call_expression (kernel_call_syntax)) @launch"
# Containers whose body's declarations are chunks of their own (for ``linkage_specification``
# only when its body is a ``{ }`` list; ``extern "C" __global__ void k()`` is one chunk).
_CONTAINERS = ("namespace_definition", "linkage_specification")

_ChunkKey = tuple[bytes, int, tuple[tuple[str, str], ...]]


class _Chunk:
    """What one chunk holds, positioned where the chunk was when it was last placed."""

    __slots__ = ("kernels", "launches", "byte", "row")

    def __init__(self, kernels: tuple[Kernel, ...], launches: tuple[LaunchSite, ...],
                 byte: int, row: int):
        self.kernels = kernels
        self.launches = launches
        self.byte = byte
        self.row = row

    def moved(self, byte: int, row: int) -> "_Chunk":
        if (byte, row) == (self.byte, self.row):
            return self
        db, dr = byte - self.byte, row - self.row
        return _Chunk(tuple(shift_kernel(k, dr, db) for k in self.kernels),
                      tuple(shift_launch(s, dr) for s in self.launches) if dr else self.launches,
                      byte, row)


class IncrementalParser:
    """``parse_source`` for one document's successive texts (see the module doc)."""

    def __init__(self) -> None:
        self._parser = new_parser()
        self._src: Optional[bytes] = None
        self._tree: Optional[tree_sitter.Tree] = None
        self._chunks: dict[_ChunkKey, _Chunk] = {}
        # id(kernel of a chunk) -> (that kernel, its launch sites, it with them attached)
        self._attached: dict[int, tuple[Kernel, tuple[LaunchSite, ...], Kernel]] = {}

    def parse(self, text: str, path: str = "<memory>") -> SourceFile:
        """``parse_source(text, path)``, reusing the previous call's work.

        Raises ``TypeError`` when ``text`` is not a ``str``. Never raises for malformed C++.
        """
        if not isinstance(text, str):
            raise TypeError(f"{path}: IncrementalParser.parse expects the source text as str, "
                            f"found {type(text).__name__}")
        src = to_bytes(text)
        if self._tree is not None and self._src is not None:
            if src != self._src:
                self._tree.edit(**edit_between(self._src, src))
                self._tree = self._parser.parse(src, self._tree)
        else:
            self._tree = self._parser.parse(src)
        self._src = src
        root = self._tree.root_node
        if root.has_error:  # the chunks of the last clean parse stay for the next one
            return parse_tree(src, text, root, path)
        return self._clean(src, text, root, path)

    def last_tree(self) -> Optional[tree_sitter.Tree]:
        """A copy of the tree of the last ``parse`` (None before the first), for other
        readers of the same text (spec inference: ``kernel_model.syntax.remember``). The
        parser edits its own tree on the next call, never this copy (``Tree.copy`` shares the
        nodes; tree-sitter copies a node before editing one that is shared)."""
        return self._tree.copy() if self._tree is not None else None

    def _clean(self, src: bytes, text: str, root: tree_sitter.Node, path: str) -> SourceFile:
        kept, kernels, sites = _chunked(src, root, self._chunks.get)
        self._chunks = kept
        index = LaunchIndex(sites)
        attached: dict[int, tuple[Kernel, tuple[LaunchSite, ...], Kernel]] = {}
        with_sites = []
        for k in kernels:
            mine = index.of(k)
            memo = self._attached.get(id(k))
            if memo is None or memo[0] is not k or memo[1] != mine:
                memo = (k, mine, _copy_with(k, launch_sites=mine))
            attached[id(k)] = memo
            with_sites.append(memo[2])
        self._attached = attached
        return SourceFile(path=path, text=text, kernels=tuple(with_sites), launch_sites=sites,
                          error_ranges=())


class _ChunkStore:
    """Chunks read from the optimizer's candidate texts (``derived_source``), by key, shared by
    every text derived from any original: least recently used dropped first once the chunks'
    bytes pass ``budget``. Thread-safe (plans run in the server's worker threads)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._entries: OrderedDict[_ChunkKey, _Chunk] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: _ChunkKey) -> Optional[_Chunk]:
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
            return hit

    def update(self, chunks: dict[_ChunkKey, _Chunk]) -> None:
        with self._lock:
            for key, chunk in chunks.items():
                if key not in self._entries:
                    self._bytes += len(key[0])
                self._entries[key] = chunk
                self._entries.move_to_end(key)
            while self._bytes > self.budget and self._entries:
                key, _ = self._entries.popitem(last=False)
                self._bytes -= len(key[0])

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


DERIVED_CHUNKS = _ChunkStore(budget=64 << 20)


def derived_source(text: str, path: str, base: SourceFile) -> SourceFile:
    """``parse_source(text, path)`` for a text derived from ``base``'s by a rewrite of one
    region (an optimizer candidate, ``PassContext.rewritten``): the tree is ``base``'s parsed
    again incrementally (``syntax.parse_near``, kept as ``parse(text)``), and the declarations
    are read only where their bytes, column and containers were not seen in an earlier
    derived text (``DERIVED_CHUNKS``), so a candidate costs its kernel, not the file. A tree
    with errors takes ``parse_source``'s own path.

    Raises ``TypeError`` when ``text`` is not a ``str``. Never raises for malformed C++.
    """
    if not isinstance(text, str):
        raise TypeError(f"{path}: derived_source expects the source text as str, found "
                        f"{type(text).__name__}")
    parsed = parse_near(text, parse(base.text))
    root = parsed.tree.root_node
    if root.has_error:
        return parse_tree(parsed.data, text, root, path)
    kept, kernels, sites = _chunked(parsed.data, root, DERIVED_CHUNKS.get)
    DERIVED_CHUNKS.update(kept)
    index = LaunchIndex(sites)
    return SourceFile(path=path, text=text,
                      kernels=tuple(_copy_with(k, launch_sites=index.of(k)) for k in kernels),
                      launch_sites=sites, error_ranges=())


def _chunked(src: bytes, root: tree_sitter.Node,
             known: Callable[[_ChunkKey], Optional[_Chunk]]
             ) -> tuple[dict[_ChunkKey, _Chunk], list[Kernel], tuple[LaunchSite, ...]]:
    """The chunks of a tree without errors, by key (each placed where it is now: ``known``'s
    chunk moved, else read from the tree), and the file's kernels (without their launch sites,
    in source order, one per span) and launch sites."""
    kept: dict[_ChunkKey, _Chunk] = {}
    kernels: list[Kernel] = []
    launches: list[LaunchSite] = []
    for node, containers in _chunk_nodes(src, root, ()):
        start, end = node.start_byte, node.end_byte
        row, column = node.start_point
        key = (src[start:end], column, containers)
        chunk = kept.get(key) or known(key)
        chunk = chunk.moved(start, row) if chunk is not None else _read_chunk(src, node)
        kept.setdefault(key, chunk)
        kernels.extend(chunk.kernels)
        launches.extend(chunk.launches)
    unique: dict[tuple[int, int], Kernel] = {}
    for k in kernels:
        unique.setdefault((k.start_byte, k.end_byte), k)
    ordered = sorted(unique.values(), key=lambda k: (k.start_byte, k.end_byte))
    return kept, ordered, tuple(launches)


def _chunk_nodes(src: bytes, node: tree_sitter.Node, containers: tuple[tuple[str, str], ...]
                 ) -> Iterator[tuple[tree_sitter.Node, tuple[tuple[str, str], ...]]]:
    """The chunks under ``node`` with the containers around each (outermost first)."""
    for child in node.children:
        if child.type in _CONTAINERS:
            body = child.child_by_field_name("body")
            if body is not None and body.type == "declaration_list":
                field = "name" if child.type == "namespace_definition" else "value"
                label = child.child_by_field_name(field)
                here = (child.type, text_of(src, label) if label is not None else "")
                yield from _chunk_nodes(src, body, containers + (here,))
                continue
        if child.type in ("{", "}", "comment"):
            continue
        yield child, containers


def _read_chunk(src: bytes, node: tree_sitter.Node) -> _Chunk:
    """The kernels and launch sites in a chunk of a tree without errors, as ``parse_source``
    finds them in the whole file (kernels without their launch sites yet)."""
    kernels = []
    for keyword in captures_outside_tables(_GLOBAL_QUERY, node, "keyword", src):
        definition = keyword.parent
        if definition is None or definition.type != "function_definition" \
                or global_token(definition) != keyword:
            continue
        scope = enclosing_scope(src, keyword)
        if scope.in_class:
            continue
        kernel = kernel_from_definition(src, definition, scope, has_errors=False)
        if kernel is not None:
            kernels.append(kernel)
    sites = tuple(launch_site_from_call(src, call)
                  for call in captures_outside_tables(_LAUNCH_QUERY, node, "launch", src))
    return _Chunk(tuple(kernels), sites, node.start_byte, node.start_point[0])


def _copy_with(obj, **changes):
    """A copy of the frozen dataclass instance ``obj`` with ``changes``: its attribute
    dictionary copied and updated (what ``dataclasses.replace`` gives for these classes,
    which have no ``__post_init__`` and no slots, at a fifth of the cost; shifting every kernel
    below an inserted line is the hot path of re-analysis)."""
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(changes)
    return new


def _shift_range(r: Range, rows: int, _new=object.__new__, _pos=Position, _cls=Range) -> Range:
    """``r`` moved down by ``rows`` lines: the frozen dataclasses built by filling their
    attribute dictionaries (a sixth of the constructor's cost; this runs for every range of
    every kernel below an inserted line)."""
    start, end = r.start, r.end
    a = _new(_pos)
    d = a.__dict__
    d["line"] = start.line + rows
    d["column"] = start.column
    b = _new(_pos)
    d = b.__dict__
    d["line"] = end.line + rows
    d["column"] = end.column
    new = _new(_cls)
    d = new.__dict__
    d["start"] = a
    d["end"] = b
    return new


def shift_launch(site: LaunchSite, rows: int) -> LaunchSite:
    """``site`` moved down by ``rows`` lines (columns unchanged)."""
    return _copy_with(site, range=_shift_range(site.range, rows))


def shift_kernel(k: Kernel, rows: int, nbytes: int) -> Kernel:
    """``k`` moved down by ``rows`` lines and ``nbytes`` bytes (columns unchanged: the text
    before it on its first line is the same). Launch sites are kept as they are."""
    if rows == 0:  # same lines (an edit earlier on a line above): only bytes move
        return _copy_with(k, start_byte=k.start_byte + nbytes, end_byte=k.end_byte + nbytes,
                          body_start_byte=k.body_start_byte + nbytes,
                          body_end_byte=k.body_end_byte + nbytes)
    params = tuple(_copy_with(p, range=_shift_range(p.range, rows)) for p in k.parameters)
    return _copy_with(k, parameters=params, range=_shift_range(k.range, rows),
                      name_range=_shift_range(k.name_range, rows),
                      body_range=_shift_range(k.body_range, rows),
                      start_byte=k.start_byte + nbytes, end_byte=k.end_byte + nbytes,
                      body_start_byte=k.body_start_byte + nbytes,
                      body_end_byte=k.body_end_byte + nbytes)
